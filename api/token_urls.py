"""Project settings → API tokens (under /p/<slug>/settings/tokens/)."""

from django.urls import path

from api import views

app_name = "api_tokens"

urlpatterns = [
    path("", views.tokens, name="list"),
    path("<int:token_id>/revoke/", views.token_revoke, name="revoke"),
]
