from django.urls import path

from ops import dashboards, views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("dashboard/", dashboards.admin_dashboard, name="admin_dashboard"),
    path("p/<slug:slug>/dashboard/", dashboards.project_dashboard, name="project_dashboard"),
]
