"""Table names as users give them: ``name``, ``schema.name`` or ``catalog.schema.name``, each
part bare or double-quoted (``"my.schema"."t"``; ``""`` inside quotes is one quote).

A name that does not split that way (an unbalanced quote, an empty part, four parts) is one
name as written, so that no input, however odd, is refused for its punctuation alone. An
engine that reads files takes a path as one name of its own (``path``), never split.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Name:
    """A table or view: its name, and the schema and catalog when given."""

    name: str
    schema: str | None = None
    catalog: str | None = None
    #: a file or folder path (the whole of ``name``), which no schema holds
    path: bool = False

    @property
    def qualified(self) -> bool:
        return self.schema is not None

    def within(self, catalog: str, schema: str) -> Name:
        """The name with the parts it does not give taken from ``catalog.schema`` (a path
        as it is)."""
        if self.path:
            return self
        return Name(self.name, self.schema or schema, self.catalog or catalog)

    def __str__(self) -> str:
        if self.path:
            return self.name
        return ".".join(_shown(p) for p in (self.catalog, self.schema, self.name) if p is not None)


def _shown(part: str) -> str:
    plain = part.replace("_", "").isalnum() and not part[:1].isdigit()
    return part if plain else '"' + part.replace('"', '""') + '"'


def parse(text: str) -> Name:
    """``text`` as a (possibly qualified) name; see the module's docstring."""
    parts = _split(text)
    if parts is None or not 1 <= len(parts) <= 3:
        return Name(text)
    if len(parts) == 1:
        return Name(parts[0])
    if len(parts) == 2:
        return Name(parts[1], parts[0])
    return Name(parts[2], parts[1], parts[0])


def _split(text: str) -> list[str] | None:
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            j, part = i + 1, []
            while True:
                if j >= n:
                    return None  # unbalanced quote
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        part.append('"')
                        j += 2
                        continue
                    break
                part.append(text[j])
                j += 1
            parts.append("".join(part))
            i = j + 1
            if i < n and text[i] != ".":
                return None
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            part_text = text[i:j]
            if not part_text or '"' in part_text:
                return None
            parts.append(part_text)
            i = j
        if i >= n:
            return parts
        i += 1  # past the dot
        if i >= n:
            return None  # a trailing dot
