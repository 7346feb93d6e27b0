from django.urls import path

from reviews.views import claims, conflicts, exports, pages, queue

app_name = "reviews"

urlpatterns = [
    path("review/", queue.queue, name="queue"),
    path("review/candidates/<int:candidate_id>/", queue.candidate_detail, name="candidate"),
    path(
        "review/candidates/<int:candidate_id>/<str:action>/",
        queue.candidate_action,
        name="candidate_action",
    ),
    path("conflicts/", conflicts.conflicts, name="conflicts"),
    path("wiki/", pages.page_list, name="pages"),
    path("wiki/<str:key>/", pages.page_view, name="page"),
    path("wiki/<str:key>/history/", pages.page_history, name="page_history"),
    path("wiki/<str:key>/diff/", pages.page_diff, name="page_diff"),
    path("wiki/<str:key>/rollback/", pages.page_rollback, name="page_rollback"),
    path("claims/<int:claim_id>/", claims.claim_detail, name="claim"),
    path("claims/<int:claim_id>/retract/", claims.claim_retract, name="claim_retract"),
    path("exports/", exports.export_list, name="exports"),
    path("exports/accept-bundle/", exports.accept_bundle, name="accept_bundle"),
    path(
        "exports/<int:export_id>/<str:name>",
        exports.export_download,
        name="export_download",
    ),
]
