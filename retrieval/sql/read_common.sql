-- What every source's SQL shares (retrieval.search.statement.common): recency, the expressions a
-- candidate computes once, and when a memory is live. Each template is an expression of the row
-- {alias} (or of {created_at}).

-- name: halvings
-- The half-lives between {created_at} and the call's moment (none before it); the half-life
-- in seconds is the bound parameter {half_life}.
(GREATEST(EXTRACT(EPOCH FROM (%(as_of)s::timestamptz - {created_at}))::float8, 0.0) / %({half_life})s::float8)

-- name: recency
-- 0.5 ^ {halvings} (a candidate's halvings, computed once), as float8; 0 past {max_halvings}
-- halvings, where PostgreSQL's power() would underflow.
(CASE WHEN {halvings} > {max_halvings} THEN 0.0::float8 ELSE power(0.5::float8, {halvings}) END)

-- name: computed_once
-- A candidate's expressions, each written once and read by name from {alias}: {expressions}.
CROSS JOIN LATERAL (SELECT {expressions}) AS {alias}

-- name: live
-- The memory {alias} was live at the call's moment: not retired nor expired then, and stored
-- by then ({known}).
({alias}.retired_at IS NULL OR {alias}.retired_at > %(as_of)s::timestamptz) AND ({alias}.expires_at IS NULL OR {alias}.expires_at > %(as_of)s::timestamptz) AND {known}

-- name: live_or_replaced
-- The memory {alias} was live at the call's moment ({live}), or a correction replaced it by
-- then: retired then, stored by then ({known}), superseded, and under no key (a key names an
-- item, whose new value replaces the old one; a correction told with `supersedes` answers what
-- its fact answered). Whether the correction is live is read where it takes its place.
(({live}) OR ({alias}.superseded_by IS NOT NULL AND {alias}.key IS NULL AND {alias}.retired_at <= %(as_of)s::timestamptz AND {known}))

-- name: known
-- The row {alias} was stored by the past moment a call asks about (%(known_at)s; NULL: now).
(%(known_at)s::timestamptz IS NULL OR {alias}.created_at <= %(known_at)s::timestamptz)

-- name: short_fact
-- The memory {alias} may be a version of a fact: not a conversation turn ({turn}), and a short
-- statement (at most %(version_most_characters)s characters). Its length in bytes answers without
-- reading a long text, which is stored compressed or out of line: a character takes one to four
-- bytes in every server encoding, so only a text in between is read to count its characters.
(NOT {turn} AND (octet_length({alias}.content) <= %(version_most_characters)s
     OR (octet_length({alias}.content) <= 4 * %(version_most_characters)s
         AND char_length({alias}.content) <= %(version_most_characters)s)))

-- name: told_at
-- When the memory {alias} was last told by the call's moment: its created_at, or a later
-- copy's time (last_seen_at) if that came by then.
(CASE WHEN {alias}.last_seen_at <= %(as_of)s::timestamptz THEN GREATEST({alias}.created_at, {alias}.last_seen_at) ELSE {alias}.created_at END)

-- name: turn
-- The memory {alias} is a conversation turn (retrieval.memory.kinds.is_turn): a message, or a
-- memory with a thread and a position, whatever its kind.
({alias}.kind = '{message}' OR ({alias}.thread_id IS NOT NULL AND {alias}.position IS NOT NULL))
