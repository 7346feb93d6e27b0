"""/api/: the JSON API, its schema (/api/openapi.json) and docs (/api/docs)."""

from django.urls import path, re_path

from api.endpoints import api
from api.middleware import api_not_found

urlpatterns = [
    path("", api.urls),
    re_path(r"^(?P<path>.*)$", api_not_found),
]
