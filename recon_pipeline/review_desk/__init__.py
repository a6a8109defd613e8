"""The review desk: a server-rendered web app where finance analysts review findings (issue 16)."""
