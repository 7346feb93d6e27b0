import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "llmwiki.settings")
application = get_wsgi_application()

from llmwiki.deploy import check_static_files  # noqa: E402  (needs the settings loaded)

check_static_files()
