-- A call's metadata filter (retrieval.search.statement.metadata): condition {i} on the metadata
-- {metadata}, its key's path %(filter_path_{i})s and its value %(filter_value_{i})s bound.

-- name: eq
-- The value at the key equals the one given, a string, number, boolean or null: the metadata
-- contains it in its path (what the metadata's GIN index answers), and the value there is not
-- a list (JSON containment finds an item in a list). Written so, not as the equality itself,
-- the planner prices the condition at the rows the containment keeps: an equality on an
-- expression it prices at 0.5% of them, and for a value half the rows hold it sorted them all
-- instead of walking the graph. A value the table's statistics call common and the tenant
-- holds rarely walks the graph and stops short; the exact read follows it
-- (docs/decisions/0066).
({metadata} @> %(filter_within_{i})s::jsonb AND jsonb_typeof({metadata} #> %(filter_path_{i})s::text[]) <> 'array')

-- name: eq_json
-- The value at the key equals the list or object given: the containment of it in its path
-- first, then the equality itself (a list or object holding more is not equal).
({metadata} @> %(filter_within_{i})s::jsonb AND ({metadata} #> %(filter_path_{i})s::text[]) = %(filter_value_{i})s::jsonb)

-- name: eq_at
-- The value at a path that reads a list's item ("tags.0") equals the one given.
({metadata} #> %(filter_path_{i})s::text[]) = %(filter_value_{i})s::jsonb

-- name: contains
-- The list at the key holds every item given ($all: JSON containment of the nested list).
{metadata} @> %(filter_value_{i})s::jsonb

-- name: ne
-- The value at the key is not the one given (a row without the key counts as not equal).
({metadata} #> %(filter_path_{i})s::text[]) IS DISTINCT FROM %(filter_value_{i})s::jsonb

-- name: compare
-- The value at the key is of the given value's JSON type (number or string) and {operator} it.
(jsonb_typeof({metadata} #> %(filter_path_{i})s::text[]) = jsonb_typeof(%(filter_value_{i})s::jsonb) AND ({metadata} #> %(filter_path_{i})s::text[]) {operator} %(filter_value_{i})s::jsonb)

-- name: in
-- The value at the key is one of the list given.
({metadata} #> %(filter_path_{i})s::text[]) IN (SELECT jsonb_array_elements(%(filter_value_{i})s::jsonb))

-- name: in_within
-- The value at the key is one of the strings, numbers, booleans or nulls given: the metadata
-- contains one of them in its path (each value nested in its path, what the metadata's GIN
-- index answers), and the value there is not a list. Written so, not as the value compared
-- with the list's elements, the planner prices it at the rows that hold the values and reads
-- few of them through the index, where it walked the graph past most rows for values few rows
-- hold (docs/decisions/0068).
({metadata} @> ANY(%(filter_within_{i})s::jsonb[]) AND jsonb_typeof({metadata} #> %(filter_path_{i})s::text[]) <> 'array')

-- name: nin
-- The value at the key is none of the list given (a row without the key included).
NOT COALESCE(({metadata} #> %(filter_path_{i})s::text[]) IN (SELECT jsonb_array_elements(%(filter_value_{i})s::jsonb)), FALSE)

-- name: substring
-- The value at the key is text holding the given text (bound as a LIKE pattern, its % and _
-- escaped).
(jsonb_typeof({metadata} #> %(filter_path_{i})s::text[]) = 'string' AND ({metadata} #>> %(filter_path_{i})s::text[]) LIKE (%(filter_value_{i})s::jsonb #>> '{{}}') ESCAPE '\')

-- name: isubstring
-- The value at the key is text holding the given text in any case.
(jsonb_typeof({metadata} #> %(filter_path_{i})s::text[]) = 'string' AND ({metadata} #>> %(filter_path_{i})s::text[]) ILIKE (%(filter_value_{i})s::jsonb #>> '{{}}') ESCAPE '\')

-- name: exists
-- The key is there (or, with false, is not).
(({metadata} #> %(filter_path_{i})s::text[]) IS NOT NULL) = (%(filter_value_{i})s::jsonb = 'true'::jsonb)

-- name: allowed
-- The chunk {key} is one of those that meet the call's filter (doc_allowed).
{key} IN (SELECT id FROM doc_allowed)

-- name: doc_allowed
-- The tenant's chunks whose metadata (their document's, then their own) meets the filter
-- {conditions}.
doc_allowed AS MATERIALIZED (
    SELECT c.id
    FROM {schema}.document_chunks AS c
    JOIN {schema}.documents AS d ON d.tenant_id = c.tenant_id AND d.id = c.document_id
    WHERE c.tenant_id = %(tenant_id)s AND {conditions}
)

-- name: keyed
-- The memory {alias} is stored under a key (an item of a key-value store).
{alias}.key IS NOT NULL

-- name: namespace
-- The memory {alias} lies in the call's namespace or below it: its names hold the namespace's
-- (the GIN index of revision 0018 finds those) and begin with them.
{alias}.namespace @> %(namespace)s::text[] AND {alias}.namespace[1:cardinality(%(namespace)s::text[])] = %(namespace)s::text[]
