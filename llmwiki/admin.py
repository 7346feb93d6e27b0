from django.contrib import admin

from llmwiki import models


class ReadOnlyAdmin(admin.ModelAdmin):
    """History rows are immutable: the admin may look, never touch."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "authority", "dreaming_enabled", "dream_schedule"]
    search_fields = ["slug", "name"]


@admin.register(models.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]


@admin.register(models.Source)
class SourceAdmin(ReadOnlyAdmin):
    list_display = ["path", "project", "sha256", "size", "importer", "retrieved_at", "status"]
    list_filter = ["project", "importer", "status"]
    search_fields = ["path", "sha256"]


@admin.register(models.Episode)
class EpisodeAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "kind", "memory_type", "occurred_at", "status"]
    list_filter = ["project", "kind", "memory_type", "status", "security_class"]
    list_select_related = ["project"]
    raw_id_fields = ["source", "supersedes"]


@admin.register(models.Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ["key", "project", "title", "owner", "review_cadence_days"]
    list_filter = ["project"]
    raw_id_fields = ["current_revision"]


@admin.register(models.PageRevision)
class PageRevisionAdmin(ReadOnlyAdmin):
    list_display = ["page", "number", "author", "reason", "created_at"]


@admin.register(models.Claim)
class ClaimAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "page", "status", "version", "approved_at"]
    list_filter = ["project", "status"]


@admin.register(models.Export)
class ExportAdmin(ReadOnlyAdmin):
    list_display = ["kind", "project", "audience", "generated_at"]


@admin.register(models.RecallTrace)
class RecallTraceAdmin(ReadOnlyAdmin):
    list_display = ["query", "project", "actor", "at"]


@admin.register(models.AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "project", "actor", "action", "object_type", "object_id"]
    list_filter = ["project", "action"]
