from django.apps import AppConfig


class DreamingConfig(AppConfig):
    name = "dreaming"
