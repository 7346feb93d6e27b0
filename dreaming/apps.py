from django.apps import AppConfig


class DreamingConfig(AppConfig):
    name = "dreaming"

    def ready(self) -> None:
        from dreaming import dashboard  # noqa: F401 - registers the project-page counts
