from django.contrib import admin

from dreaming import models
from llmwiki.admin import ReadOnlyAdmin


@admin.register(models.DreamRun)
class DreamRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "trigger", "status", "created_at", "duration_ms"]
    list_filter = ["project", "status", "trigger"]


@admin.register(models.Candidate)
class CandidateAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "page_target", "status", "score", "created_at"]
    list_filter = ["project", "status", "page_target"]


@admin.register(models.Conflict)
class ConflictAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "subject", "kind", "status", "detected_at"]
    list_filter = ["project", "status"]
