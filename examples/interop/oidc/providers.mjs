// Two real OAuth 2.0 / OpenID Connect authorization servers (panva's `oidc-provider`,
// pinned in ../package.json) for end-to-end tests of per-user upstream credentials:
//
//   "users"    — the issuer of the gateway's own users. A host app (`host-app`, public,
//                PKCE) gets a JWT access token for the gateway (`aud` = gatewayResource,
//                `sub` = the login); the gateway logs browser users in with
//                `gateway-login` (confidential) or `gateway-login-public` (public).
//   "upstream" — the authorization server of the upstream MCP server. Its client
//                `gateway` (confidential) may use the code flow (PKCE, refresh tokens
//                with rotation, revocation), client credentials, and RFC 8693 token
//                exchange of a "users" access token for an upstream one (`aud` =
//                upstreamResource, `sub` = the same user).
//
// Both run on 127.0.0.1 in this one process. When both listen it prints exactly one line
// to stdout, e.g. {"users":"http://127.0.0.1:P1","upstream":"http://127.0.0.1:P2"} (the
// issuers; nothing else is ever written to stdout, and nothing with a token in it goes
// anywhere). Errors and oidc-provider's warnings go to stderr. It exits when its stdin
// closes, so a test that dies does not leave it running.
//
// Usage: node oidc/providers.mjs [CONFIG_JSON]
//   CONFIG_JSON (or, when there is no argument, the env var OIDC_PEERS_CONFIG) is one JSON
//   object:
//   {
//     "gatewayResource":         "http://127.0.0.1:GW/mcp",   // required
//     "upstreamResource":        "http://127.0.0.1:UP/mcp",   // required
//     "hostRedirectUri":         "http://127.0.0.1:9/cb",     // required (host-app)
//     "gatewayLoginRedirectUri": "http://127.0.0.1:GW/login/callback", // required
//     "gatewayCallbackUri":      "http://127.0.0.1:GW/oauth/callback", // required
//     "gatewayClientSecret":     "…",       // required unless gatewayJwks is given
//     "gatewayJwks":             {"keys": [ …public JWKs… ]},           // optional
//     "gatewayAuthMethod":       "client_secret_basic" | "client_secret_post" | "private_key_jwt",
//                                // optional: how `gateway` authenticates at "upstream";
//                                // default client_secret_basic, or private_key_jwt when
//                                // only gatewayJwks is given. With gatewayJwks and
//                                // another method, `gateway-jwt` (private_key_jwt) is
//                                // registered as well.
//     "deniedSubjects":          ["mallory"],  // optional: exchanges refused for them
//     "accessTokenTtl":          300,          // optional, seconds, both instances
//     "gatewayScope":            "mcp",        // optional: the gateway resource's scopes
//     "upstreamScope":           "mcp",        // optional: the upstream resource's scopes
//     "usersPort": 0, "upstreamPort": 0        // optional; 0 = any free port
//   }
//   The ports may also come from OIDC_USERS_PORT / OIDC_UPSTREAM_PORT.
//
// Test-only endpoint (outside oidc-provider, on the "upstream" server):
//   GET /_test/exchanges -> {"count":N,"bySubject":{"alice":1,…},"refused":M}
//   POST /_test/revoke-grants?sub=alice -> {"revoked":N}: every grant alice gave the
//   upstream's clients revoked, as an administrator would (refresh tokens, the grant)
//   (N successful token exchanges, M refused ones.)
//
// Endpoints are oidc-provider's defaults: discovery at
// ISSUER/.well-known/openid-configuration, /auth, /token, /token/revocation,
// /token/introspection, /jwks, /me; the devInteractions login form takes any login name
// (it becomes `sub`) and any password.

import { generateKeyPairSync, createPublicKey, randomBytes, verify as verifySignature } from 'node:crypto';
import * as http from 'node:http';

// stdout carries the ready line only: oidc-provider's notices (console.info/log) go to
// stderr with its warnings. It is imported after this, so its import-time notices do too.
console.log = console.error;
console.info = console.error;
const { default: Provider, errors } = await import('oidc-provider');

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

function fail(message) {
  process.stderr.write(`providers.mjs: ${message}\n`);
  process.exit(2);
}

// ---- configuration ------------------------------------------------------------------

let config;
try {
  config = JSON.parse(process.argv[2] ?? process.env.OIDC_PEERS_CONFIG ?? '');
} catch (e) {
  fail(`the configuration (argument or OIDC_PEERS_CONFIG) is not JSON: ${e.message}`);
}
if (!config || typeof config !== 'object') fail('the configuration must be a JSON object');
for (const key of ['gatewayResource', 'upstreamResource', 'hostRedirectUri', 'gatewayLoginRedirectUri', 'gatewayCallbackUri']) {
  if (typeof config[key] !== 'string' || !config[key]) fail(`config.${key} is required`);
}
if (!config.gatewayClientSecret && !config.gatewayJwks) {
  fail('config.gatewayClientSecret (or config.gatewayJwks) is required');
}
const ttl = Number(config.accessTokenTtl ?? 300);
if (!Number.isInteger(ttl) || ttl <= 0) fail('config.accessTokenTtl must be a positive integer');
const denied = new Set(config.deniedSubjects ?? []);
const gatewayScope = config.gatewayScope ?? 'mcp';
const upstreamScope = config.upstreamScope ?? 'mcp';
const gatewayAuthMethod = config.gatewayAuthMethod
  ?? (config.gatewayClientSecret ? 'client_secret_basic' : 'private_key_jwt');
const port = (key, env) => Number(config[key] ?? process.env[env] ?? 0);

// ---- plumbing -----------------------------------------------------------------------

/** An RS256 signing key pair as a private JWK (its public half is served at jwks_uri). */
function signingKey(kid) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
}

/** An HTTP server on 127.0.0.1:`wanted` (0: any); its handler is set once it listens. */
function listen(wanted) {
  return new Promise((resolve, reject) => {
    const server = http.createServer();
    server.once('error', reject);
    server.on('clientError', (err, socket) => {
      if (err.code === 'ECONNRESET' || !socket.writable) {
        socket.destroy();
        return;
      }
      process.stderr.write(`providers.mjs: a bad HTTP request: ${err.code ?? err.message}\n`);
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    });
    server.listen(wanted, '127.0.0.1', () => resolve(server));
  });
}

function account(_ctx, sub) {
  return {
    accountId: sub,
    async claims() {
      return { sub, preferred_username: sub, name: sub };
    },
  };
}

/** The oidc-provider configuration both instances share. */
function common(name, key, resources, features = {}) {
  return {
    jwks: { keys: [key] },
    findAccount: account,
    claims: { openid: ['sub'], profile: ['name', 'preferred_username'] },
    scopes: ['openid', 'offline_access', 'profile'],
    cookies: {
      keys: [randomBytes(32).toString('base64url')],
      // Both issuers are on 127.0.0.1, and cookies do not tell ports apart: distinct
      // names keep one instance's session out of the other's way.
      names: {
        session: `_${name}_session`,
        interaction: `_${name}_interaction`,
        resume: `_${name}_interaction_resume`,
      },
    },
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: { enabled: true, useGrantedResource: () => true, ...resources },
      ...features,
    },
    // The code flow only (no implicit or hybrid responses).
    responseTypes: ['code'],
    pkce: { required: () => true },
    // oidc-provider's own defaults for the rest, set so it does not remark on them.
    ttl: {
      AccessToken: ttl,
      ClientCredentials: ttl,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 3600,
      Grant: 14 * 24 * 60 * 60,
      RefreshToken: 14 * 24 * 60 * 60,
      Session: 14 * 24 * 60 * 60,
    },
    // Refresh tokens for every client allowed the grant (oidc-provider's default asks for
    // `offline_access` and a consent prompt too), not tied to the browser session.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    expiresWithSession: () => false,
    rotateRefreshToken: () => true,
    clientBasedCORS: () => true,
  };
}

/** A resource server whose access tokens are JWTs signed by its issuer's RS256 key. */
function jwtResource(scope) {
  return {
    scope,
    accessTokenTTL: ttl,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'RS256' } },
  };
}

/** Logs an instance's server errors (never a token) to stderr. */
function logErrors(name, provider) {
  provider.on('server_error', (_ctx, err) => {
    process.stderr.write(`providers.mjs [${name}]: server error: ${err?.stack ?? err}\n`);
  });
}

// ---- "users" --------------------------------------------------------------------------

const usersServer = await listen(port('usersPort', 'OIDC_USERS_PORT'));
const usersIssuer = `http://127.0.0.1:${usersServer.address().port}`;
const usersKey = signingKey('users-1');
const loginClients = new Set(['gateway-login', 'gateway-login-public']);

const users = new Provider(usersIssuer, {
  ...common('users', usersKey, {
    // A host that names no resource gets a token for the gateway anyway; the gateway's
    // own login gets a plain OpenID Connect one (usable at userinfo).
    defaultResource: (_ctx, client, oneOf) => {
      if (oneOf) return oneOf;
      return client && loginClients.has(client.clientId) ? undefined : config.gatewayResource;
    },
    getResourceServerInfo: (_ctx, resource) => {
      if (resource !== config.gatewayResource) {
        throw new errors.InvalidTarget(`this issuer issues tokens for ${config.gatewayResource} only`);
      }
      return jwtResource(gatewayScope);
    },
  }),
  clients: [
    {
      client_id: 'host-app',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [config.hostRedirectUri],
    },
    {
      client_id: 'gateway-login',
      ...(config.gatewayClientSecret
        ? { client_secret: config.gatewayClientSecret, token_endpoint_auth_method: 'client_secret_basic' }
        : { jwks: config.gatewayJwks, token_endpoint_auth_method: 'private_key_jwt' }),
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [config.gatewayLoginRedirectUri],
      scope: 'openid profile offline_access',
    },
    {
      client_id: 'gateway-login-public',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [config.gatewayLoginRedirectUri],
      scope: 'openid profile offline_access',
    },
  ],
});
logErrors('users', users);

// ---- "upstream" -----------------------------------------------------------------------

const upstreamServer = await listen(port('upstreamPort', 'OIDC_UPSTREAM_PORT'));
const upstreamIssuer = `http://127.0.0.1:${upstreamServer.address().port}`;
const upstreamKey = signingKey('upstream-1');

function gatewayClient(clientId, method) {
  return {
    client_id: clientId,
    token_endpoint_auth_method: method,
    ...(method === 'private_key_jwt'
      ? { jwks: config.gatewayJwks }
      : { client_secret: config.gatewayClientSecret }),
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials', TOKEN_EXCHANGE],
    response_types: ['code'],
    redirect_uris: [config.gatewayCallbackUri],
  };
}
const upstreamClients = [gatewayClient('gateway', gatewayAuthMethod)];
if (config.gatewayJwks && gatewayAuthMethod !== 'private_key_jwt') {
  upstreamClients.push(gatewayClient('gateway-jwt', 'private_key_jwt'));
}

const upstream = new Provider(upstreamIssuer, {
  ...common('upstream', upstreamKey, {
    defaultResource: (_ctx, _client, oneOf) => oneOf ?? config.upstreamResource,
    getResourceServerInfo: (_ctx, resource) => {
      if (resource !== config.upstreamResource) {
        throw new errors.InvalidTarget(`this issuer issues tokens for ${config.upstreamResource} only`);
      }
      return jwtResource(upstreamScope);
    },
  }, {
    clientCredentials: { enabled: true },
    // Open dynamic client registration (RFC 7591), for a gateway without a client here.
    registration: { enabled: true },
  }),
  clients: upstreamClients,
});
logErrors('upstream', upstream);

// ---- RFC 8693 token exchange at "upstream" --------------------------------------------

const exchanges = { count: 0, bySubject: {}, refused: 0 };
let usersJwks;

function invalidGrant(description) {
  return new errors.CustomOIDCProviderError('invalid_grant', description);
}

/** The users instance's public keys, from its jwks_uri (fetched once, as a real AS would cache them). */
async function usersKeys() {
  if (!usersJwks) {
    const discovery = await (await fetch(`${usersIssuer}/.well-known/openid-configuration`)).json();
    usersJwks = await (await fetch(discovery.jwks_uri)).json();
  }
  return usersJwks.keys;
}

/** The claims of `token` if it is a valid access token the "users" issuer made for the gateway. */
async function verifyUserToken(token) {
  const parts = typeof token === 'string' ? token.split('.') : [];
  if (parts.length !== 3) throw invalidGrant('subject_token is not a JWT');
  let header;
  let claims;
  try {
    header = JSON.parse(Buffer.from(parts[0], 'base64url'));
    claims = JSON.parse(Buffer.from(parts[1], 'base64url'));
  } catch {
    throw invalidGrant('subject_token is not a JWT');
  }
  if (header.alg !== 'RS256') throw invalidGrant(`subject_token: alg ${header.alg} is not accepted`);
  if (header.typ !== 'at+jwt') throw invalidGrant('subject_token is not a JWT access token (typ at+jwt)');
  const jwk = (await usersKeys()).find((k) => k.kid === header.kid);
  if (!jwk) throw invalidGrant('subject_token is not signed by a key of the trusted users issuer');
  const good = verifySignature(
    'sha256',
    Buffer.from(`${parts[0]}.${parts[1]}`),
    createPublicKey({ key: jwk, format: 'jwk' }),
    Buffer.from(parts[2], 'base64url'),
  );
  if (!good) throw invalidGrant('subject_token signature is invalid');
  const now = Math.floor(Date.now() / 1000);
  if (claims.iss !== usersIssuer) throw invalidGrant(`subject_token issuer ${claims.iss} is not trusted`);
  if (typeof claims.exp !== 'number' || claims.exp <= now) throw invalidGrant('subject_token has expired');
  if (typeof claims.nbf === 'number' && claims.nbf > now + 5) throw invalidGrant('subject_token is not yet valid');
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(config.gatewayResource)) {
    throw invalidGrant(`subject_token audience is not ${config.gatewayResource}`);
  }
  if (typeof claims.sub !== 'string' || !claims.sub) throw invalidGrant('subject_token has no sub');
  return claims;
}

const asList = (v) => (v === undefined ? [] : [].concat(v));

async function tokenExchange(ctx) {
  const { params, client } = ctx.oidc;
  try {
    if (!params.subject_token) throw new errors.InvalidRequest('missing required parameter subject_token');
    if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
      throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
    }
    if (params.actor_token || params.actor_token_type) {
      throw new errors.InvalidRequest('actor tokens are not supported');
    }
    if (params.requested_token_type && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
      throw new errors.InvalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
    }
    const targets = [...asList(params.resource), ...asList(params.audience)];
    for (const target of targets) {
      if (target !== config.upstreamResource) {
        throw new errors.InvalidTarget(`tokens are issued for ${config.upstreamResource} only, not ${target}`);
      }
    }

    const subject = await verifyUserToken(params.subject_token);
    if (denied.has(subject.sub)) {
      throw invalidGrant(`token exchange for subject ${subject.sub} is denied by policy`);
    }

    const offered = upstreamScope.split(' ');
    const asked = params.scope ? params.scope.split(' ') : offered;
    const refusedScope = asked.filter((s) => !offered.includes(s));
    if (refusedScope.length) {
      throw new errors.InvalidScope('requested scope is not allowed', refusedScope.join(' '));
    }

    const resourceServer = new upstream.ResourceServer(config.upstreamResource, jwtResource(upstreamScope));
    const token = new upstream.AccessToken({
      accountId: subject.sub,
      client,
      scope: asked.join(' '),
      gty: TOKEN_EXCHANGE,
      resourceServer,
      expiresIn: ttl,
    });
    const value = await token.save();

    exchanges.count += 1;
    exchanges.bySubject[subject.sub] = (exchanges.bySubject[subject.sub] ?? 0) + 1;
    ctx.body = {
      access_token: value,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: 'Bearer',
      expires_in: ttl,
      scope: token.scope,
    };
  } catch (err) {
    exchanges.refused += 1;
    throw err;
  }
}

upstream.registerGrantType(
  TOKEN_EXCHANGE,
  tokenExchange,
  ['subject_token', 'subject_token_type', 'actor_token', 'actor_token_type',
    'requested_token_type', 'resource', 'audience', 'scope'],
  ['resource', 'audience'],
);

// ---- serve ----------------------------------------------------------------------------

usersServer.on('request', users.callback());

// The grants each user gave the upstream's clients, for an administrator's revocation.
const grantsBySubject = new Map();
upstream.on('refresh_token.saved', (token) => {
  if (!grantsBySubject.has(token.accountId)) grantsBySubject.set(token.accountId, new Set());
  grantsBySubject.get(token.accountId).add(token.grantId);
});

/** Revokes every grant `sub` gave, as an administrator would: its refresh tokens, its
 * access tokens (those kept: JWT access tokens stay valid until they expire), the grant. */
async function revokeGrants(sub) {
  const ids = [...(grantsBySubject.get(sub) ?? [])];
  for (const id of ids) {
    await upstream.RefreshToken.revokeByGrantId(id);
    await upstream.AccessToken.revokeByGrantId(id);
    await upstream.Grant.adapter.destroy(id);
  }
  grantsBySubject.delete(sub);
  return ids.length;
}

const upstreamApp = upstream.callback();
upstreamServer.on('request', (req, res) => {
  const [path, query] = req.url.split('?');
  if (req.method === 'GET' && path === '/_test/exchanges') {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(exchanges));
    return;
  }
  if (req.method === 'POST' && path === '/_test/revoke-grants') {
    const sub = new URLSearchParams(query ?? '').get('sub') ?? '';
    revokeGrants(sub).then(
      (revoked) => {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify({ revoked }));
      },
      (err) => {
        console.error(`revoking the grants of ${sub} failed:`, err);
        res.writeHead(500);
        res.end();
      },
    );
    return;
  }
  upstreamApp(req, res);
});

process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();

process.stdout.write(`${JSON.stringify({ users: usersIssuer, upstream: upstreamIssuer })}\n`);
