from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from llmwiki import audit_views, erasure_views, views

project_patterns = [
    path("", views.project_home, name="project_home"),
    path("settings/", views.project_settings, name="project_settings"),
    path("settings/tokens/", include("api.token_urls")),
    path("upload/", views.upload, name="upload"),
    path("episodes/", views.episode_list, name="episode_list"),
    path("episodes/<int:episode_id>/", views.episode_detail, name="episode"),
    path("quarantine/", views.quarantine, name="quarantine"),
    path("audit/", audit_views.audit_log, name="audit_log"),
    path("sources/<int:source_id>/erase/", erasure_views.erase_source, name="erase_source"),
    path("dreaming/", include("dreaming.urls")),
    path("", include("reviews.urls")),
]

urlpatterns = [
    path("", views.project_list, name="project_list"),
    path("p/<slug:slug>/", include(project_patterns)),
    path("wizard/", include("wizard.urls")),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("", include("ops.urls")),
]
