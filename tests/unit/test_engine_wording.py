"""How a sentence is read as a reviewer would see it: quotes, prompts and plain text."""

from __future__ import annotations

from dreaming.engine.text import analyse
from dreaming.engine.wording import display_text, junk_reason, points_to_files


def test_a_markdown_quote_is_prose_and_a_prompt_followed_by_a_command_is_not():
    quote = "> **Handbook** > > This handbook is the reference for every deploy of the ledger."
    assert junk_reason(quote, analyse(quote)) is None
    assert display_text(quote) == (
        "**Handbook** This handbook is the reference for every deploy of the ledger."
    )
    prompt = "> kubectl rollout restart deployment/ledger -n prod"
    assert junk_reason(prompt, analyse(prompt)) == "shell_command"


def test_a_comparison_outside_a_quote_keeps_its_sign():
    assert display_text("Scale out when load > 80% on tw-app-1.") == (
        "Scale out when load > 80% on tw-app-1."
    )


def test_a_line_of_file_paths_under_a_label_only_points_to_files():
    assert points_to_files("Source: `src/components/ui/TopBar.tsx`")
    assert points_to_files("**CI/CD:** `.github/workflows/ci.yml`")
    assert points_to_files("`src/utils/colour.ts` (`ensureColour`), `src/types.ts`")
    # a command, a package, a value, or a word said of the file is more than a pointer
    assert not points_to_files("**Tests:** `npm run test`")
    assert not points_to_files("Renderer: `@react-three/fiber`")
    assert not points_to_files("Port: `5432`")
    assert not points_to_files("Config is read from `config/app.toml` at startup.")
    assert not points_to_files("Lint: `npm run lint` then fix with `scripts/fix.sh`")
