"""Support record revisions. Each one is a frozen snapshot: never import the live tables here."""
