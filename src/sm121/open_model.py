"""`Open`: the one base of a record that keeps the keys it does not name. Results files,
tune's records, an agent's messages and a server's replies are read into models that name
what sm121 reads and keep the rest, so a record read and written back (`to_json`: the keys
it was given, nothing defaulted) is the record that came, whichever sm121 wrote it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Open(BaseModel):
    """A record that keeps the keys it does not name."""

    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)
