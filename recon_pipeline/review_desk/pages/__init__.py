"""The review desk's page areas: each module's ``routes(desk)`` serves one concern."""
