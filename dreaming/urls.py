from django.urls import path

from dreaming import views

app_name = "dreaming"

urlpatterns = [
    path("", views.status, name="status"),
    path("trigger/", views.trigger, name="trigger"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("candidates/", views.candidate_list, name="candidates"),
    path("candidates/<int:candidate_id>/", views.candidate_explain, name="explain"),
    path("policy/", views.policy, name="policy"),
]
