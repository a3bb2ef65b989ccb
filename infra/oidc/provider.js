// A real OpenID Connect provider for the identity tests: panva's certified `oidc-provider`
// (npm, installed by `npm ci --prefix infra/oidc`), configured as a deployment would configure
// its IdP for agentledger: the device authorization grant for people, client credentials for
// services, and JWT access tokens whose audience is the API's (resource indicators).
//
//   node infra/oidc/provider.js CONFIG.json
//
// CONFIG: {"port": N, "issuer": URL, "clients": [...client metadata, optional "device_code_ttl"],
//          "resources": {URI: {"audience": AUD, "ttl": SECONDS}}, "default_resource": URI}
// Prints one line, "listening <issuer>", once it accepts connections.
//
// The people's side of the device flow is this provider's own pages (/device, then the
// interaction below): the login page accepts any name as the person's account id, as a test
// stands in for the person; "abort" there denies the request (access_denied).
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const signing = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const jwk = { ...signing.export({ format: 'jwk' }), kid: randomUUID(), alg: 'ES256', use: 'sig' };
const deviceTtl = Object.fromEntries(
  config.clients.map((c) => [c.client_id, c.device_code_ttl ?? 600]),
);
const clients = config.clients.map(({ device_code_ttl: _ignored, ...metadata }) => metadata);
const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8">
<title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

const provider = new Provider(config.issuer, {
  clients,
  // Its one key is ES256: what the API accepts (asymmetric only) and what the tokens use.
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  jwks: { keys: [jwk] },
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    deviceFlow: {
      enabled: true,
      userCodeInputSource: (ctx, form) => { ctx.body = page('Sign-in', form); },
      userCodeConfirmSource: (ctx, form) => { ctx.body = page('Confirm device', form); },
      successSource: (ctx) => { ctx.body = page('Signed in', '<p>You may close this page.</p>'); },
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => config.default_resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        const server = config.resources[resource];
        if (!server) throw new Provider.errors.InvalidTarget();
        return {
          scope: 'api',
          audience: server.audience,
          accessTokenTTL: server.ttl ?? 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
  ttl: {
    DeviceCode: (ctx, code, client) => deviceTtl[client.clientId] ?? 600,
    AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? 600,
    ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? 600,
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
});

// The login page: a name signs that person in and consents to what was asked; abort denies.
provider.use(async (ctx, next) => {
  const match = ctx.path.match(/^\/interaction\/([^/]+)(\/(login|abort))?$/);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (ctx.method === 'GET') {
    ctx.type = 'html';
    ctx.body = page('Log in', `<form method="post" action="/interaction/${escape(match[1])}/login">
<input name="login"/><button>Sign in</button></form>
<form method="post" action="/interaction/${escape(match[1])}/abort"><button>Abort</button></form>`);
    return undefined;
  }
  const result = match[3] === 'abort'
    ? { error: 'access_denied', error_description: 'the person refused the request' }
    : await signedIn(details, new URLSearchParams(await body(ctx.req)).get('login'));
  return provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
});

async function signedIn(details, login) {
  const grant = new provider.Grant({ accountId: login, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope ?? 'openid');
  grant.addResourceScope(details.params.resource ?? config.default_resource, 'api');
  return { login: { accountId: login }, consent: { grantId: await grant.save() } };
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

provider.listen(config.port, '127.0.0.1', () => {
  process.stdout.write(`listening ${config.issuer}\n`);
});
