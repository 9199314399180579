-- Idempotency keys of create-call requests, one row per (organization,
-- key). Times are integer nanoseconds since the epoch. status is 0 while
-- the first request with the key runs (it holds the key until lease_until),
-- then the HTTP status of its response, whose JSON body is in body and is
-- replayed to every later request with the key and the same request_hash
-- (SHA-256 of the body). call_id is the call the key places, chosen at the
-- first claim: a request that takes over a claim whose holder died creates
-- the same call, which the cluster then refuses to create twice.
CREATE TABLE idempotency_keys (
    namespace    TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    call_id      TEXT    NOT NULL,
    status       INTEGER NOT NULL,
    body         TEXT,
    lease_until  BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL,
    PRIMARY KEY (namespace, key)
);

CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
