"""Realistic values for schema properties: by property name (``city`` → ``"San Francisco"``, ``limit``
→ 10) and by string ``format``, plus the distinct variants of a value and a value fitted to length
bounds."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from mockllm.runtime.echo.naming import split_words

_STRINGS: dict[str, str] = {
    "city": "San Francisco",
    "town": "San Francisco",
    "location": "San Francisco, CA",
    "place": "San Francisco, CA",
    "destination": "San Francisco, CA",
    "origin": "New York, NY",
    "address": "123 Main St, San Francisco, CA 94105",
    "street": "123 Main St",
    "street_address": "123 Main St",
    "state": "CA",
    "region": "California",
    "zip": "94105",
    "zip_code": "94105",
    "zipcode": "94105",
    "postal_code": "94105",
    "postcode": "94105",
    "country": "United States",
    "country_code": "US",
    "email": "user@example.com",
    "email_address": "user@example.com",
    "recipient": "user@example.com",
    "to": "user@example.com",
    "cc": "user@example.com",
    "bcc": "user@example.com",
    "sender": "user@example.com",
    "attendee": "user@example.com",
    "name": "Alex Smith",
    "full_name": "Alex Smith",
    "first_name": "Alex",
    "given_name": "Alex",
    "last_name": "Smith",
    "family_name": "Smith",
    "surname": "Smith",
    "username": "alexsmith",
    "user_name": "alexsmith",
    "author": "Alex Smith",
    "url": "https://example.com",
    "uri": "https://example.com",
    "link": "https://example.com",
    "website": "https://example.com",
    "homepage": "https://example.com",
    "endpoint": "https://example.com/api",
    "domain": "example.com",
    "hostname": "example.com",
    "host": "example.com",
    "phone": "+14155550100",
    "phone_number": "+14155550100",
    "mobile": "+14155550100",
    "telephone": "+14155550100",
    "date": "2024-01-15",
    "day": "2024-01-15",
    "birthday": "1990-01-15",
    "birthdate": "1990-01-15",
    "time": "09:30",
    "datetime": "2024-01-15T09:30:00Z",
    "date_time": "2024-01-15T09:30:00Z",
    "timestamp": "2024-01-15T09:30:00Z",
    "query": "example query",
    "q": "example query",
    "search": "example query",
    "keyword": "example",
    "subject": "Example subject",
    "title": "Example title",
    "body": "Example message body.",
    "message": "Example message",
    "content": "Example content",
    "text": "Example text",
    "description": "Example description",
    "summary": "Example summary",
    "comment": "Example comment",
    "note": "Example note",
    "prompt": "Example prompt",
    "language": "en",
    "lang": "en",
    "locale": "en-US",
    "currency": "USD",
    "timezone": "America/Los_Angeles",
    "time_zone": "America/Los_Angeles",
    "tz": "America/Los_Angeles",
    "unit": "celsius",
    "units": "metric",
    "id": "abc123",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "color": "blue",
    "company": "Example Inc.",
    "organization": "Example Inc.",
    "password": "Example-Passw0rd!",
    "sql": "SELECT 1",
    "table": "users",
    "table_name": "users",
    "database": "main",
    "collection": "items",
    "path": "/tmp/example.txt",
    "file": "example.txt",
    "filename": "example.txt",
    "file_name": "example.txt",
    "file_path": "/tmp/example.txt",
    "directory": "/tmp",
    "folder": "/tmp",
    "ip": "192.0.2.1",
    "ip_address": "192.0.2.1",
    "status": "active",
    "category": "general",
    "symbol": "AAPL",
    "ticker": "AAPL",
    "expression": "10+5",
}

_NUMBERS: dict[str, Fraction] = {
    "latitude": Fraction("37.7749"),
    "lat": Fraction("37.7749"),
    "longitude": Fraction("-122.4194"),
    "lon": Fraction("-122.4194"),
    "lng": Fraction("-122.4194"),
    "limit": Fraction(10),
    "max_results": Fraction(10),
    "num_results": Fraction(10),
    "top_k": Fraction(10),
    "per_page": Fraction(10),
    "page_size": Fraction(10),
    "page": Fraction(1),
    "year": Fraction(2024),
    "month": Fraction(1),
    "day": Fraction(15),
    "hour": Fraction(9),
    "minute": Fraction(30),
    "second": Fraction(0),
    "age": Fraction(30),
    "quantity": Fraction(1),
    "port": Fraction(8080),
    "zoom": Fraction(10),
    "days": Fraction(7),
    "timeout": Fraction(30),
    "duration": Fraction(30),
    "amount": Fraction(100),
    "price": Fraction(10),
}

_GENERIC_LAST_WORDS = frozenset({"name", "id", "code", "number", "value", "type", "key"})

FORMATS: dict[str, str] = {
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "iri": "https://example.com",
    "uri-reference": "https://example.com",
    "iri-reference": "https://example.com",
    "uri-template": "https://example.com/{id}",
    "date": "2024-01-15",
    "date-time": "2024-01-15T09:30:00Z",
    "datetime": "2024-01-15T09:30:00Z",
    "time": "09:30:00Z",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "duration": "P1D",
    "json-pointer": "/example",
    "relative-json-pointer": "0",
    "regex": "^example$",
    "byte": "ZXhhbXBsZQ==",
    "password": "Example-Passw0rd!",
    "phone": "+14155550100",
}


def singular(word: str) -> str:
    """``cities`` → ``city``, ``items`` → ``item``; words ending in ss/us/is are kept."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _name_keys(name: str) -> list[str]:
    """Table keys to try for a property name, most specific first."""
    words = split_words(name)
    if not words:
        return []
    keys = ["_".join(words), "".join(words)]
    last = words[-1]
    if last in _GENERIC_LAST_WORDS and len(words) > 1:
        keys += [words[-2], singular(words[-2])]
    keys += [last, singular(last), singular("_".join(words))]
    return keys


def name_string(name: str) -> str | None:
    """A realistic string for a property name, or None."""
    for key in _name_keys(name):
        if key in _STRINGS:
            return _STRINGS[key]
    return None


def name_number(name: str) -> Fraction | None:
    """A realistic number for a property name, or None."""
    for key in _name_keys(name):
        if key in _NUMBERS:
            return _NUMBERS[key]
    return None


def fit(base: str, lo: int, hi: int | None) -> str:
    """``base`` repeated or cut to a length between ``lo`` and ``hi``."""
    s = base
    if len(s) < lo:
        s = (base * (lo // max(len(base), 1) + 1))[:lo]
    if hi is not None and len(s) > hi:
        s = s[:hi]
    return s


def string_variants(base: str) -> Iterator[str]:
    """Distinct strings near ``base`` (``user2@example.com``, ``example 2``, one character changed …)."""
    local, at, domain = base.partition("@")
    if at:
        yield from (f"{local}{k}@{domain}" for k in range(2, 12))
    if "://" in base:
        yield from (f"{base.rstrip('/')}/{k}" for k in range(2, 12))
    for k in range(2, 12):
        yield f"{base} {k}"
        yield f"{base}{k}"
        yield f"{base}-{k}"
    for pos in range(len(base) - 1, max(len(base) - 9, -1), -1):
        for ch in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
            if ch != base[pos]:
                yield base[:pos] + ch + base[pos + 1 :]
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        yield base + ch
