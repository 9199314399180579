-- Calls, one row per (organization, call id). Times are integer nanoseconds
-- since the epoch, as in SQLite, so that both dialects compare the same
-- values. object is JSON rather than JSONB: JSONB reorders keys, and a
-- caller's metadata is echoed back exactly as it was sent.
CREATE TABLE calls (
    namespace        TEXT   NOT NULL,
    call_id          TEXT   NOT NULL,
    created_at       BIGINT NOT NULL,
    status           TEXT   NOT NULL,
    disposition      TEXT   NOT NULL,
    agent_id         TEXT   NOT NULL,
    to_number        TEXT   NOT NULL,
    source           TEXT   NOT NULL,
    ended_at         BIGINT,
    resource_version BIGINT NOT NULL,
    object           JSON   NOT NULL,
    updated_at       BIGINT NOT NULL,
    PRIMARY KEY (namespace, call_id)
);

-- A newest-first page of one organization, unfiltered or filtered on one
-- column, is a range scan of one of these.
CREATE INDEX calls_by_created     ON calls (namespace, created_at DESC, call_id DESC);
CREATE INDEX calls_by_status      ON calls (namespace, status, created_at DESC, call_id DESC);
CREATE INDEX calls_by_disposition ON calls (namespace, disposition, created_at DESC, call_id DESC);
CREATE INDEX calls_by_agent       ON calls (namespace, agent_id, created_at DESC, call_id DESC);
CREATE INDEX calls_by_to_number   ON calls (namespace, to_number, created_at DESC, call_id DESC);
CREATE INDEX calls_by_source      ON calls (namespace, source, created_at DESC, call_id DESC);
