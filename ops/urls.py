from django.urls import path

from ops import dashboard_views, probe_views

urlpatterns = [
    path("healthz", probe_views.healthz, name="healthz"),
    path("metrics", probe_views.metrics, name="metrics"),
    path("dashboard/", dashboard_views.admin_dashboard, name="admin_dashboard"),
    path("p/<slug:slug>/dashboard/", dashboard_views.project_dashboard, name="project_dashboard"),
]
