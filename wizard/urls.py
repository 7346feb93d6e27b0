from django.urls import path

from wizard import views

app_name = "wizard"

urlpatterns = [
    path("", views.start, name="start"),
    path("<int:run_id>/", views.resume, name="resume"),
    path("<int:run_id>/project/", views.step_project, name="project"),
    path("<int:run_id>/import/", views.step_import, name="import"),
    path("<int:run_id>/classify/", views.step_classify, name="classify"),
    path("<int:run_id>/proposals/", views.step_proposals, name="proposals"),
    path("<int:run_id>/preview/", views.step_preview, name="preview"),
    path("<int:run_id>/conflicts/", views.step_conflicts, name="conflicts"),
    path("<int:run_id>/commit/", views.step_commit, name="commit"),
    path("<int:run_id>/exports/", views.step_exports, name="exports"),
]
