from django.urls import path

from reviews import export_views, views

app_name = "reviews"

urlpatterns = [
    path("review/", views.queue, name="queue"),
    path("review/candidates/<int:candidate_id>/", views.candidate_detail, name="candidate"),
    path(
        "review/candidates/<int:candidate_id>/<str:action>/",
        views.candidate_action,
        name="candidate_action",
    ),
    path("conflicts/", views.conflicts, name="conflicts"),
    path("wiki/", views.page_list, name="pages"),
    path("wiki/<str:key>/", views.page_view, name="page"),
    path("wiki/<str:key>/history/", views.page_history, name="page_history"),
    path("wiki/<str:key>/diff/", views.page_diff, name="page_diff"),
    path("wiki/<str:key>/rollback/", views.page_rollback, name="page_rollback"),
    path("claims/<int:claim_id>/", views.claim_detail, name="claim"),
    path("claims/<int:claim_id>/retract/", views.claim_retract, name="claim_retract"),
    path("exports/", export_views.export_list, name="exports"),
    path("exports/accept-bundle/", export_views.accept_bundle, name="accept_bundle"),
    path(
        "exports/<int:export_id>/<str:name>",
        export_views.export_download,
        name="export_download",
    ),
]
