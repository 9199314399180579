-- The first attempt to dial each call, one row per (organization, call id),
-- written just before the carrier is asked to place it. A leader that dies
-- between dialing and recording it in the Call's status leaves this row:
-- the next leader resumes that dial instead of ringing the number again.
-- Times are integer nanoseconds since the epoch; rows older than a day are
-- swept.
CREATE TABLE dial_attempts (
    namespace    TEXT   NOT NULL,
    call_id      TEXT   NOT NULL,
    attempted_at BIGINT NOT NULL,
    PRIMARY KEY (namespace, call_id)
);

CREATE INDEX dial_attempts_by_time ON dial_attempts (attempted_at);
