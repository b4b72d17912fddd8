"""The rules a PostgreSQL store holds itself, so that a web machine broken into can do no more
than its web process could: the writes a web process makes are these functions (`SECURITY
DEFINER`, run as the tables' owner), which judge the end, the reveal and the limits with the
database's own clock, in the transaction that writes. The web processes' role executes them
and reads what a team may read; it writes no table itself but the chunks of an upload it is
receiving (`files`, under `incoming/`, read by no one but the owner), and reads nothing that
holds a per-user score, a private score or a user's split (`postgres.WEB_GRANTS`).

SQLite has no roles: there the same rules are `sql.SqlStore`'s transactions, and the tests
hold both to one suite (tests/serve/test_serve.py)."""

from __future__ import annotations

#: The functions, each run as the owner with the search path it was made with. `scorer_now`
#: is the time every rule reads: the database's clock, unless the session is the owner's
#: and sets `scorer.clock` (the tests' fixed times); a web role cannot move it.
FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION scorer_now() RETURNS TEXT LANGUAGE sql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
SELECT CASE
    WHEN coalesce(current_setting('scorer.clock', true), '') <> ''
         AND pg_has_role(session_user, (SELECT tableowner FROM pg_tables
             WHERE schemaname = current_schema() AND tablename = 'teams'), 'MEMBER')
    THEN current_setting('scorer.clock', true)
    ELSE to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')
END $$;

CREATE OR REPLACE FUNCTION scorer_limits() RETURNS JSON LANGUAGE sql STABLE
SET search_path FROM CURRENT AS $$
SELECT coalesce((SELECT value::json FROM state WHERE key = 'limits'), '{}'::json) $$;

CREATE OR REPLACE FUNCTION scorer_closed(at TEXT) RETURNS BOOLEAN LANGUAGE sql STABLE
SET search_path FROM CURRENT AS $$
SELECT EXISTS (SELECT 1 FROM state WHERE key = 'revealed_at')
    OR coalesce(at >= scorer_limits()->>'end', false)
    OR coalesce(at >= scorer_limits()->>'reveal_at', false) $$;

-- A team's limit `name`: its own where the organiser set one, else the competition's.
CREATE OR REPLACE FUNCTION scorer_limit(p_team BIGINT, name TEXT) RETURNS BIGINT
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
SELECT coalesce(scorer_limits()->'teams'->(p_team::TEXT)->>name, scorer_limits()->>name)::BIGINT
$$;

CREATE OR REPLACE FUNCTION accept_upload(
    p_team BIGINT, p_sha256 TEXT, p_size BIGINT, p_path TEXT, p_suffix TEXT, p_incoming TEXT,
    p_filename TEXT DEFAULT '', p_description TEXT DEFAULT '',
    OUT id BIGINT, OUT refused TEXT, OUT at TEXT)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    limits JSON := scorer_limits();
    team_name TEXT;
    today BIGINT;
    rejected BIGINT;
    total BIGINT;
BEGIN
    SELECT t.name INTO team_name FROM teams t WHERE t.id = p_team AND t.revoked = 0 FOR UPDATE;
    IF NOT FOUND THEN
        refused := 'unauthorized';
        RETURN;
    END IF;
    at := scorer_now();  -- with the team's row held
    IF scorer_closed(at) THEN
        refused := 'competition_ended';
        RETURN;
    END IF;
    IF at < limits->>'start' THEN
        refused := 'not_started';
        RETURN;
    END IF;
    SELECT count(*) FILTER (WHERE s.counted = 'daily'
                            AND s.submitted_at >= left(at, 10) || 'T00:00:00+00:00'),
           count(*) FILTER (WHERE s.counted = 'rejected'), count(s.counted)
      INTO today, rejected, total FROM submissions s WHERE s.team = p_team;
    IF scorer_limit(p_team, 'rejected') <= rejected THEN
        refused := 'rejected_limit';
    ELSIF scorer_limit(p_team, 'total') <= total THEN
        refused := 'total_limit';
    ELSIF scorer_limit(p_team, 'daily') <= today THEN
        refused := 'daily_limit';
    END IF;
    IF refused IS NOT NULL THEN
        RETURN;
    END IF;
    INSERT INTO submissions (team, submitted_at, sha256, size, path, suffix, status, counted,
        filename, description)
    VALUES (p_team, at, p_sha256, p_size, p_path, p_suffix, 'queued', 'daily',
        left(p_filename, 255), left(p_description, 200))
    RETURNING submissions.id INTO id;
    IF p_incoming LIKE 'incoming/%' THEN  -- the chunks this transaction wrote, renamed
        UPDATE files SET name = 'submissions/' || id WHERE files.name = p_incoming;
    END IF;
    INSERT INTO audit (at, event, detail) VALUES (at, 'upload', json_build_object(
        'id', id, 'sha256', p_sha256, 'size', p_size, 'team', team_name)::TEXT);
END $$;

CREATE OR REPLACE FUNCTION refuse_upload(p_team BIGINT, p_reason TEXT) RETURNS VOID
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
INSERT INTO refusals VALUES (p_team, left(p_reason, 64), left(scorer_now(), 16) || ':00+00:00', 1)
ON CONFLICT (team, reason, minute) DO UPDATE SET count = refusals.count + 1 $$;

CREATE OR REPLACE FUNCTION set_picks(p_team BIGINT, p_ids BIGINT[], OUT refused TEXT,
    OUT detail TEXT)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    most INT := coalesce((scorer_limits()->>'picks')::INT, 2);
    chosen BIGINT[] := ARRAY(SELECT DISTINCT x FROM unnest(p_ids) x ORDER BY x);
    one BIGINT;
    found TEXT;
    at TEXT;
BEGIN
    PERFORM 1 FROM teams WHERE teams.id = p_team FOR UPDATE;
    at := scorer_now();
    IF scorer_closed(at) THEN
        refused := 'competition_ended';
        RETURN;
    END IF;
    IF cardinality(chosen) > most THEN
        refused := 'too_many';
        detail := cardinality(chosen) || ' ' || most;
        RETURN;
    END IF;
    FOREACH one IN ARRAY chosen LOOP
        SELECT s.status INTO found FROM submissions s WHERE s.id = one AND s.team = p_team;
        IF found IS NULL THEN
            refused := 'not_yours';
            detail := one::TEXT;
            RETURN;
        ELSIF found <> 'scored' THEN
            refused := 'not_scored';
            detail := one || ' ' || found;
            RETURN;
        END IF;
    END LOOP;
    DELETE FROM picks WHERE team = p_team;
    INSERT INTO picks SELECT p_team, x FROM unnest(chosen) x;
    INSERT INTO audit (at, event, detail)
    VALUES (at, 'picks', json_build_object('team', p_team, 'ids', to_json(chosen))::TEXT);
END $$;

CREATE OR REPLACE FUNCTION add_team(p_name TEXT, p_name_key TEXT, p_token_sha256 TEXT)
RETURNS BIGINT LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    made BIGINT;
BEGIN
    IF coalesce(p_name_key, '') = '' THEN  -- a team without its key would clash with none
        RAISE EXCEPTION 'a team needs its name_key' USING ERRCODE = 'not_null_violation';
    END IF;
    INSERT INTO teams (name, name_key, token_sha256) VALUES (p_name, p_name_key, p_token_sha256)
    RETURNING id INTO made;
    INSERT INTO audit (at, event, detail)
    VALUES (scorer_now(), 'team_added', json_build_object('team', p_name)::TEXT);
    RETURN made;
END $$;

CREATE OR REPLACE FUNCTION reveal() RETURNS TEXT
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    at TEXT := scorer_now();
    made INT;
BEGIN
    INSERT INTO state VALUES ('revealed_at', at) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS made = ROW_COUNT;
    IF made = 1 THEN
        INSERT INTO audit (at, event, detail) VALUES (at, 'reveal', '{}');
        -- the solution and its commitment's salt, published where a web role reads them
        INSERT INTO files SELECT 'revealed/' || h.name, h.seq, h.data FROM hidden h
            WHERE h.name IN ('solution.csv', 'salt');
    END IF;
    RETURN (SELECT value FROM state WHERE key = 'revealed_at');
END $$;

CREATE OR REPLACE FUNCTION set_settings(p_settings TEXT, p_limits TEXT, p_changed TEXT)
RETURNS VOID LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
INSERT INTO state VALUES ('settings', p_settings), ('limits', p_limits)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
INSERT INTO audit (at, event, detail) VALUES (scorer_now(), 'settings', p_changed) $$;

CREATE OR REPLACE FUNCTION open_session(p_id_sha256 TEXT, p_team BIGINT, p_token_sha256 TEXT,
    p_seconds DOUBLE PRECISION) RETURNS BOOLEAN
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    at TEXT := scorer_now();
    made INT;
BEGIN
    DELETE FROM sessions WHERE expires_at::timestamptz <= at::timestamptz;
    INSERT INTO sessions SELECT p_id_sha256, t.id, t.token_sha256,
        to_char((at::timestamptz + p_seconds * interval '1 second') AT TIME ZONE 'UTC',
                'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')
    FROM teams t WHERE t.id = p_team AND t.token_sha256 = p_token_sha256 AND t.revoked = 0;
    GET DIAGNOSTICS made = ROW_COUNT;
    RETURN made = 1;
END $$;

CREATE OR REPLACE FUNCTION session_team(p_id_sha256 TEXT, OUT id BIGINT, OUT name TEXT)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
SELECT t.id, t.name FROM sessions s
JOIN teams t ON t.id = s.team AND t.token_sha256 = s.token_sha256
WHERE s.id_sha256 = p_id_sha256 AND s.expires_at::timestamptz > scorer_now()::timestamptz
    AND t.revoked = 0 $$;

CREATE OR REPLACE FUNCTION close_session(p_id_sha256 TEXT) RETURNS VOID
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DELETE FROM sessions WHERE id_sha256 = p_id_sha256;
DELETE FROM admin_sessions WHERE id_sha256 = p_id_sha256 $$;

-- The organiser's page: opened only with the admin token's hash as the settings hold it.
CREATE OR REPLACE FUNCTION open_admin_session(p_id_sha256 TEXT, p_token_sha256 TEXT,
    p_seconds DOUBLE PRECISION) RETURNS BOOLEAN
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    at TEXT := scorer_now();
BEGIN
    IF coalesce(p_token_sha256, '') = '' OR p_token_sha256 IS DISTINCT FROM
        (SELECT value::json->>'admin_sha256' FROM state WHERE key = 'settings') THEN
        RETURN false;
    END IF;
    DELETE FROM admin_sessions WHERE expires_at::timestamptz <= at::timestamptz;
    INSERT INTO admin_sessions VALUES (p_id_sha256,
        to_char((at::timestamptz + p_seconds * interval '1 second') AT TIME ZONE 'UTC',
                'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'));
    INSERT INTO audit (at, event, detail) VALUES (at, 'admin_login', '{}');
    RETURN true;
END $$;

CREATE OR REPLACE FUNCTION admin_session(p_id_sha256 TEXT) RETURNS BOOLEAN
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
SELECT EXISTS (SELECT 1 FROM admin_sessions WHERE id_sha256 = p_id_sha256
    AND expires_at::timestamptz > scorer_now()::timestamptz) $$;

ALTER TABLE files ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS shared ON files;
CREATE POLICY shared ON files FOR SELECT
    USING (name NOT LIKE 'submissions/%' AND name NOT LIKE 'incoming/%'
        AND name NOT LIKE 'kept/%');
DROP POLICY IF EXISTS incoming ON files;
CREATE POLICY incoming ON files FOR INSERT WITH CHECK (name LIKE 'incoming/%');
"""

#: The functions a web role executes; every other role but the owner none of them.
WEB_FUNCTIONS = (
    "accept_upload(BIGINT, TEXT, BIGINT, TEXT, TEXT, TEXT, TEXT, TEXT)",
    "refuse_upload(BIGINT, TEXT)",
    "set_picks(BIGINT, BIGINT[])",
    "add_team(TEXT, TEXT, TEXT)",
    "reveal()",
    "set_settings(TEXT, TEXT, TEXT)",
    # a team's page: the web role opens, finds and ends a session by its id's hash, and
    # reads no row of `sessions` itself
    "open_session(TEXT, BIGINT, TEXT, DOUBLE PRECISION)",
    "session_team(TEXT)",
    "close_session(TEXT)",
    # the organiser's page, the same way: `admin_sessions` is no table of its
    "open_admin_session(TEXT, TEXT, DOUBLE PRECISION)",
    "admin_session(TEXT)",
)

#: The functions of an older scorer whose arguments changed: dropped when its store is
#: upgraded (`postgres.PostgresStore._upgrade`), their grants given to the new ones.
REPLACED = {"add_team(TEXT, TEXT)": "add_team(TEXT, TEXT, TEXT)"}

#: Executable by the owner alone until granted (PostgreSQL lets everyone run a new function).
REVOKED = "\n".join(
    f"REVOKE ALL ON FUNCTION {f} FROM PUBLIC;" for f in (*WEB_FUNCTIONS, "scorer_now()")
)

#: What a web role (`postgres.PostgresStore.share(web_role=)`) may do, table by table: serve,
#: accept uploads, count limits, refusals and picks, reveal, read the published boards and
#: what a team is told of its verdicts. Not a line of `hidden`, where the solution and the
#: salt are (it reads them once `reveal` copies them to `files`), nor of `per_user`, nor a
#: private score: before the reveal nothing it reads tells a user's split.
WEB_GRANTS = (
    ("SELECT", "teams, submissions, picks, state, audit, refusals, boards"),
    ("SELECT (submission, status, public, error)", "verdicts"),
    ("SELECT, INSERT", "files"),  # the shared files, and an upload's chunks (row security)
    *(("EXECUTE", f"FUNCTION {function}") for function in WEB_FUNCTIONS),
)
