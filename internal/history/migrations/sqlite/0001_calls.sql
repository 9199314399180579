-- Calls, one row per (organization, call id). Times are integer nanoseconds
-- since the epoch; object is the whole resource as JSON text.
CREATE TABLE calls (
    namespace        TEXT    NOT NULL,
    call_id          TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    status           TEXT    NOT NULL,
    disposition      TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    to_number        TEXT    NOT NULL,
    source           TEXT    NOT NULL,
    ended_at         INTEGER,
    resource_version INTEGER NOT NULL,
    object           TEXT    NOT NULL,
    updated_at       INTEGER NOT NULL,
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
