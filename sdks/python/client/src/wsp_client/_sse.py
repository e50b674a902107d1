"""A Server-Sent Events decoder (the WHATWG `text/event-stream` format), fed one line at a time
as the body streams in, so an event is handed over as soon as its blank line arrives. The
change feed never ends: a reader that waits for the whole body (as a plain `httpx` request
does) waits forever."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event."""

    event: str
    """The `event:` field; `message` when the event named none."""
    data: str
    """The `data:` lines joined by newlines."""
    id: str | None
    """The last `id:` seen on the stream so far, if any."""
    retry: int | None
    """The `retry:` field of this event, in milliseconds, if it had one."""


class SSEDecoder:
    """Turns lines (without their line ends) into events."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._retry: int | None = None
        self._last_id: str | None = None

    def feed(self, line: str) -> ServerSentEvent | None:
        """Takes one line; answers the event a blank line completes."""
        if line == "":
            if not self._data:
                self._event, self._retry = "", None
                return None
            event = ServerSentEvent(self._event or "message", "\n".join(self._data), self._last_id, self._retry)
            self._event, self._data, self._retry = "", [], None
            return event
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None
