"""The manual (docs/, mkdocs.yml) builds as `make docs` builds it: strictly, so a broken link or anchor
fails; and the README stays a short front page whose every relative link leads to a file."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_the_manual_builds_with_no_warning(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "architecture.html").is_file()


def test_the_readme_is_at_most_300_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def _relative_links(markdown: str) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", markdown)
    return [target for target in targets if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


def _anchors(page: pathlib.Path) -> set[str]:
    """The ids MkDocs gives the headings of a page (lower case, punctuation dropped, spaces to dashes)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    return {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower()) for heading in headings}


def test_every_relative_link_in_the_readme_leads_to_a_file():
    links = _relative_links(README.read_text(encoding="utf-8"))
    assert links, "the README links into the manual"
    missing = [link for link in links if not (ROOT / link.split("#", 1)[0]).exists()]
    assert missing == []


def test_every_anchor_the_readme_links_to_is_a_heading_of_its_page():
    links = [link.split("#", 1) for link in _relative_links(README.read_text(encoding="utf-8")) if "#" in link]
    assert links, "the README links to sections of the manual"
    missing = [f"{path}#{anchor}" for path, anchor in links if anchor not in _anchors(ROOT / path)]
    assert missing == []
