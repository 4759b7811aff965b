"""The Hugging Face Hub's network boundary, replaced by a recorder for the push tests."""

from __future__ import annotations

from pathlib import Path

import pytest


def record_hub_uploads(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Replace huggingface_hub.create_repo and upload_folder; returns the list they append to:
    ("create_repo", repo_id, private, token), ("upload_folder", repo_id, [files]), ("card", README text)."""
    import huggingface_hub

    calls: list[tuple] = []

    def create_repo(repo_id, **kwargs):
        calls.append(("create_repo", repo_id, kwargs.get("private"), kwargs.get("token")))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(*, repo_id, folder_path, **kwargs):
        folder = Path(folder_path)
        calls.append(("upload_folder", repo_id, sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))))
        calls.append(("card", (folder / "README.md").read_text()))

    monkeypatch.setattr(huggingface_hub, "create_repo", create_repo)
    monkeypatch.setattr(huggingface_hub, "upload_folder", upload_folder)
    return calls
