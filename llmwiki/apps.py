from django.apps import AppConfig


class LlmwikiConfig(AppConfig):
    name = "llmwiki"
    verbose_name = "llmwiki core"

    def ready(self) -> None:
        from llmwiki.search import erasure

        erasure.register()
