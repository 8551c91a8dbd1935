"""Archives as dicts of members, for tests that edit saved files."""
from __future__ import annotations

import io
import zipfile


def archive_of(obj) -> dict[str, bytes]:
    """The members of the archive `obj.save` writes."""
    buffer = io.BytesIO()
    obj.save(buffer)
    with zipfile.ZipFile(buffer) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def zipped(files: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> io.BytesIO:
    """An archive of `files`, as an open binary file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    buffer.seek(0)
    return buffer
