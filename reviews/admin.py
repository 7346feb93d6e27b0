from django.contrib import admin

from llmwiki.admin import ReadOnlyAdmin
from reviews import models


@admin.register(models.Review)
class ReviewAdmin(ReadOnlyAdmin):
    list_display = ["candidate", "reviewer", "action", "at"]
