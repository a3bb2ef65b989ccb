"""Tokens from an OpenID Connect identity provider for the CLI (docs/identity.md)."""
