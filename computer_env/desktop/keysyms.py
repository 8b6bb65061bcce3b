"""Which X keysym types a character, shared by the guest server's typing and the client's
fallback typing on an upstream OSWorld server (a module of its own: no X library needed)."""


def keysym_for(char: str) -> int:
    """The keysym that types ``char``: Latin-1 keysyms are the code point, others 0x1000000+cp."""
    cp = ord(char)
    return cp if cp < 0x100 else 0x01000000 | cp


def mappable(char: str) -> bool:
    """Printable characters get a key; control characters are left to xdotool (Tab, Escape)."""
    cp = ord(char)
    return cp >= 0x20 and not 0x7F <= cp < 0xA0


__all__ = ["keysym_for", "mappable"]
