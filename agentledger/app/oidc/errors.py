"""What can go wrong getting a token from an identity provider, or having the API accept it.

AgentLedgerError
 ├── ConfigError
 │    └── NotSignedIn           no usable token is cached (``agentledger login``)
 ├── ServerUnavailable
 │    └── IssuerUnreachable     the provider (discovery document or token endpoint) did not answer
 └── Refused                   ``reason_code`` names the case, as the provider or the API did
      ├── SignInFailed          the provider refused to issue a token (a service's wrong secret)
      │    ├── DeviceCodeExpired  nobody completed the device sign-in before its code expired
      │    └── SignInDenied       the person refused (aborted) the device sign-in
      └── TokenRefused          the API refused the token (its problem ``type``)
           ├── TokenExpired       ``token-expired``
           ├── WrongAudience      ``wrong-audience``: the token is for another API
           ├── IssuerNotTrusted   ``issuer-not-trusted``: the API trusts no such issuer
           └── IssuerNotBound     ``issuer-not-bound``: the issuer does not speak for that
                                  subject's tenant
"""

from __future__ import annotations

from agentledger.app.errors import ConfigError, Refused, ServerUnavailable


class NotSignedIn(ConfigError):
    pass


class IssuerUnreachable(ServerUnavailable):
    pass


class SignInFailed(Refused):
    pass


class DeviceCodeExpired(SignInFailed):
    pass


class SignInDenied(SignInFailed):
    pass


class TokenRefused(Refused):
    pass


class TokenExpired(TokenRefused):
    pass


class WrongAudience(TokenRefused):
    pass


class IssuerNotTrusted(TokenRefused):
    pass


class IssuerNotBound(TokenRefused):
    pass


REFUSALS: dict[str, type[TokenRefused]] = {
    "token-expired": TokenExpired,
    "wrong-audience": WrongAudience,
    "issuer-not-trusted": IssuerNotTrusted,
    "issuer-not-bound": IssuerNotBound,
}
"""The API's 401 problem types (``api.problems``) as the errors the CLI raises."""


def token_refused(slug: str, detail: str) -> TokenRefused:
    return REFUSALS.get(slug, TokenRefused)(f"the API refused the token: {detail}", slug)
