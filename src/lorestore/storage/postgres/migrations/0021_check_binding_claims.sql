-- 0021_check_binding_claims.sql
--
-- Why: the rules a scope binding must keep were checked in Python only, so an org admin
--   inserting into scope_bindings as the app role bypassed them: a binding of `global` or of
--   a wildcard owner (`repo::*/*`), or one sharing scopes with another org's binding. And
--   Python compared patterns as text: while org:acme held `repo::acme/*`, any org could bind
--   `branch::acme/*::main` (or `branch::acme/app*::release`), which, being narrower, won and
--   took every main branch of acme's repositories from acme.
-- What changes: lorestore_globs_meet(p, q) (whether one text matches both globs; the table
--   of core/patterns.py's globs_meet, line for line) and lorestore_patterns_overlap(a, b) (a
--   repository pattern also covering its repositories' branches); a BEFORE INSERT OR UPDATE
--   trigger on scope_bindings (lorestore_check_binding, definer, so that it sees every org's
--   bindings) refusing a pattern that names no owner or project (SQLSTATE LS003) or shares a
--   scope with another org's binding (SQLSTATE LS002).
-- Tenancy: narrows what the app role may do; nothing becomes visible that was not.
-- Compatibility: the service of this release checks the same rules first; bindings already
--   stored are not re-checked.
-- Verify: as lorestore_app, an admin of org:evil inserting ('org:evil', 'branch::acme/*::main')
--   while org:acme holds 'repo::acme/*' fails with "shares scopes with repo::acme/*".

CREATE FUNCTION lorestore_globs_meet(p text, q text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    m integer := length(p);
    n integer := length(q);
    w integer := length(q) + 1;
    reach boolean[] := array_fill(false, ARRAY[(length(p) + 1) * (length(q) + 1)]);
    pc text;  -- p[i-1], the character before i
    pn text;  -- p[i], the character at i
    qc text;
    qn text;
BEGIN
    reach[1] := true;
    FOR i IN 0..m LOOP
        pc := CASE WHEN i > 0 THEN substr(p, i, 1) END;
        pn := CASE WHEN i < m THEN substr(p, i + 1, 1) END;
        FOR j IN 0..n LOOP
            CONTINUE WHEN reach[i * w + j + 1];
            qc := CASE WHEN j > 0 THEN substr(q, j, 1) END;
            qn := CASE WHEN j < n THEN substr(q, j + 1, 1) END;
            reach[i * w + j + 1] :=
                (i > 0 AND pc = '*' AND reach[(i - 1) * w + j + 1])
                OR (j > 0 AND i < m AND pn = '*' AND reach[i * w + j])
                OR (j > 0 AND qc = '*' AND reach[i * w + j])
                OR (i > 0 AND j < n AND qn = '*' AND reach[(i - 1) * w + j + 1])
                OR (i > 0 AND j > 0 AND pc <> '*' AND qc <> '*' AND pc = qc
                    AND reach[(i - 1) * w + j]);
            reach[i * w + j + 1] := coalesce(reach[i * w + j + 1], false);
        END LOOP;
    END LOOP;
    RETURN reach[m * w + n + 1];
END $$;

CREATE FUNCTION lorestore_patterns_overlap(a text, b text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, public, pg_temp
    AS $$
        SELECT bool_or(public.lorestore_globs_meet(x, y))
        FROM unnest(CASE WHEN a LIKE 'repo::%'
                         THEN ARRAY[a, 'branch::' || substr(a, 7) || '::*'] ELSE ARRAY[a] END) AS x,
             unnest(CASE WHEN b LIKE 'repo::%'
                         THEN ARRAY[b, 'branch::' || substr(b, 7) || '::*'] ELSE ARRAY[b] END) AS y
    $$;

CREATE FUNCTION lorestore_check_binding() RETURNS trigger
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    kind text := split_part(NEW.pattern, '::', 1);
    first text := split_part(split_part(substr(NEW.pattern, length(kind) + 3), '/', 1), '::', 1);
    other public.scope_bindings%ROWTYPE;
BEGIN
    IF kind NOT IN ('project', 'repo', 'branch') OR first = '' OR position('*' IN first) > 0
       OR NEW.pattern <> lower(NEW.pattern) THEN
        RAISE EXCEPTION '% names no owner or project: bound, it would take every matching scope',
            NEW.pattern USING ERRCODE = 'LS003';
    END IF;
    SELECT * INTO other FROM public.scope_bindings AS b
    WHERE b.org <> NEW.org AND public.lorestore_patterns_overlap(b.pattern, NEW.pattern)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% shares scopes with %, bound to %', NEW.pattern, other.pattern, other.org
            USING ERRCODE = 'LS002';
    END IF;
    RETURN NEW;
END $$;

GRANT SELECT ON scope_bindings TO lorestore_definer;
ALTER FUNCTION lorestore_check_binding() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_check_binding() FROM PUBLIC;

CREATE TRIGGER scope_bindings_checked BEFORE INSERT OR UPDATE OF org, pattern
    ON public.scope_bindings
    FOR EACH ROW EXECUTE FUNCTION lorestore_check_binding();
