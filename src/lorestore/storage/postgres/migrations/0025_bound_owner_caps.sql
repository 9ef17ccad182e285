-- 0025_bound_owner_caps.sql
--
-- Why: the cap counter was the app role's to write. Migration 0015 kept INSERT and UPDATE of
--   owner_stats.active_lessons for lorestore_app because the counting trigger ran as the
--   writer, so in raw SQL a user could lower its own count and write past its cap, and a
--   plain member of an org could raise the org's count and block every other member's
--   writes. The cap also bounded active lessons only: archived lessons, every version and the
--   records of an unknown type an import keeps (up to 16 MiB each) were unlimited, so one
--   write token could fill the disk for every tenant.
-- What changes: lorestore_app loses INSERT and UPDATE on owner_stats (it keeps SELECT of its
--   writable owners' rows). The counts are kept by SECURITY DEFINER trigger functions owned
--   by lorestore_definer, with schema-qualified objects and search_path pg_catalog, public,
--   pg_temp, through one private function lorestore_count_owner() nobody else may execute.
--   owner_stats gains stored_bytes (CHECK >= 0: the UTF-8 bytes of every lesson's value and
--   ext, every version's value, every kept foreign record and the ext an import keeps on
--   tombstones and scope policies, whatever the lessons' status) and max_bytes; active_lessons gets CHECK (>= 0). Caps max_active and max_bytes may be NULL,
--   which follows the database's default in the one-row table cap_defaults: 10,000 active
--   lessons and 1 GiB per owner on a server (`lorestore db cap default ...` changes them).
--   A write beyond the byte cap fails with SQLSTATE LS005 (cap_exceeded, cap stored_bytes),
--   beyond the lesson cap with LS001 as before. Existing caps of exactly 10,000 (the old
--   column default) become NULL, which follows the same default of 10,000; other caps are
--   kept. Both counters are recounted from the rows (row-level security is lifted for the
--   owner role for that, inside this one transaction, and forced again).
-- Tenancy: narrows what the app role may do; nothing becomes visible that was not.
--   cap_defaults is configuration, not a tenant's: the app role may read it (an import checks
--   the cap in force before inserting), RLS forced with a read-only policy, no write grant;
--   operators set it with a superuser URL.
-- Compatibility: the service never writes owner_stats; `lorestore db cap` of the previous
--   release sets max_active with a superuser URL, which still works. A previous release
--   reads LS005 as an unknown error (it does not know the byte cap).
-- Verify: as lorestore_app, `UPDATE owner_stats SET active_lessons = 0` and `INSERT INTO
--   owner_stats (owner) VALUES ('user:x')` fail with permission denied, `SELECT
--   lorestore_count_owner('user:x', -1, 0)` too; a write still raises its owner's
--   active_lessons and stored_bytes; `SELECT * FROM cap_defaults` is (10000, 1073741824).

DROP TRIGGER lessons_count_active ON public.lessons;
DROP FUNCTION public.lessons_count_active();

REVOKE INSERT, UPDATE ON public.owner_stats FROM lorestore_app;

CREATE TABLE public.cap_defaults (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    max_active  integer CHECK (max_active >= 0),
    max_bytes   bigint CHECK (max_bytes >= 0)
);

INSERT INTO public.cap_defaults (id, max_active, max_bytes) VALUES (true, 10000, 1073741824);

ALTER TABLE public.cap_defaults ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.cap_defaults FORCE ROW LEVEL SECURITY;
CREATE POLICY cap_defaults_read ON public.cap_defaults FOR SELECT USING (true);
GRANT SELECT ON public.cap_defaults TO lorestore_app;

ALTER TABLE public.owner_stats
    ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0),
    ADD COLUMN max_bytes bigint CHECK (max_bytes >= 0),
    ALTER COLUMN max_active DROP NOT NULL,
    ALTER COLUMN max_active DROP DEFAULT;

-- The recount reads every tenant: the owner role is subject to forced row-level security, so
-- it is lifted for this transaction only and forced again below.
ALTER TABLE public.owner_stats NO FORCE ROW LEVEL SECURITY;
ALTER TABLE public.lessons NO FORCE ROW LEVEL SECURITY;
ALTER TABLE public.lesson_versions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE public.foreign_records NO FORCE ROW LEVEL SECURITY;
ALTER TABLE public.tombstones NO FORCE ROW LEVEL SECURITY;
ALTER TABLE public.scope_policies NO FORCE ROW LEVEL SECURITY;

UPDATE public.owner_stats SET max_active = NULL WHERE max_active = 10000;

INSERT INTO public.owner_stats (owner)
SELECT owner FROM public.lessons UNION SELECT owner FROM public.foreign_records
UNION SELECT owner FROM public.tombstones UNION SELECT owner FROM public.scope_policies
ON CONFLICT (owner) DO NOTHING;

UPDATE public.owner_stats AS s SET
    active_lessons = (SELECT count(*) FROM public.lessons AS l
                      WHERE l.owner = s.owner AND l.status = 'active'),
    stored_bytes =
        (SELECT coalesce(sum(octet_length(l.value) + octet_length(l.ext::text)), 0)
         FROM public.lessons AS l WHERE l.owner = s.owner)
        + (SELECT coalesce(sum(octet_length(v.value)), 0)
           FROM public.lesson_versions AS v WHERE v.owner = s.owner)
        + (SELECT coalesce(sum(octet_length(f.record::text)), 0)
           FROM public.foreign_records AS f WHERE f.owner = s.owner)
        + (SELECT coalesce(sum(octet_length(t.ext::text)), 0)
           FROM public.tombstones AS t WHERE t.owner = s.owner)
        + (SELECT coalesce(sum(octet_length(p.ext::text)), 0)
           FROM public.scope_policies AS p WHERE p.owner = s.owner);

ALTER TABLE public.owner_stats ADD CHECK (active_lessons >= 0);

ALTER TABLE public.owner_stats FORCE ROW LEVEL SECURITY;
ALTER TABLE public.lessons FORCE ROW LEVEL SECURITY;
ALTER TABLE public.lesson_versions FORCE ROW LEVEL SECURITY;
ALTER TABLE public.foreign_records FORCE ROW LEVEL SECURITY;
ALTER TABLE public.tombstones FORCE ROW LEVEL SECURITY;
ALTER TABLE public.scope_policies FORCE ROW LEVEL SECURITY;

-- Add to an owner's counters and refuse growth beyond its caps (its own, else the default).
-- Private: only the trigger functions below, owned by the same role, call it.
CREATE FUNCTION public.lorestore_count_owner(who text, lessons_delta integer, bytes_delta bigint)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    now_active integer;
    now_bytes bigint;
    own_active integer;
    own_bytes bigint;
    cap_active integer;
    cap_bytes bigint;
BEGIN
    IF lessons_delta = 0 AND bytes_delta = 0 THEN
        RETURN;
    END IF;
    INSERT INTO public.owner_stats AS s (owner, active_lessons, stored_bytes)
    VALUES (who, greatest(lessons_delta, 0), greatest(bytes_delta, 0))
    ON CONFLICT (owner) DO UPDATE
        SET active_lessons = s.active_lessons + lessons_delta,
            stored_bytes = s.stored_bytes + bytes_delta
    RETURNING s.active_lessons, s.stored_bytes, s.max_active, s.max_bytes
        INTO now_active, now_bytes, own_active, own_bytes;
    IF lessons_delta <= 0 AND bytes_delta <= 0 THEN
        RETURN;
    END IF;
    SELECT coalesce(own_active, d.max_active), coalesce(own_bytes, d.max_bytes)
        INTO cap_active, cap_bytes FROM public.cap_defaults AS d;
    IF lessons_delta > 0 AND now_active > cap_active THEN
        RAISE EXCEPTION 'cap_exceeded: % has reached its limit of % active lessons',
            who, cap_active USING ERRCODE = 'LS001';
    END IF;
    IF bytes_delta > 0 AND now_bytes > cap_bytes THEN
        RAISE EXCEPTION 'cap_exceeded: % would store % bytes, over its limit of % bytes',
            who, now_bytes, cap_bytes USING ERRCODE = 'LS005';
    END IF;
END $$;

-- A lesson's share: 1 if active, and the bytes of its value and ext. An owner change (which
-- the service never makes) moves the share from one owner to the other.
CREATE FUNCTION public.lorestore_count_lesson() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    old_active integer := 0;
    old_bytes bigint := 0;
    new_active integer := 0;
    new_bytes bigint := 0;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_active := (OLD.status = 'active')::integer;
        old_bytes := pg_catalog.octet_length(OLD.value) + pg_catalog.octet_length(OLD.ext::text);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        new_active := (NEW.status = 'active')::integer;
        new_bytes := pg_catalog.octet_length(NEW.value) + pg_catalog.octet_length(NEW.ext::text);
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.owner = NEW.owner THEN
        PERFORM public.lorestore_count_owner(NEW.owner, new_active - old_active,
                                             new_bytes - old_bytes);
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM public.lorestore_count_owner(OLD.owner, -old_active, -old_bytes);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM public.lorestore_count_owner(NEW.owner, new_active, new_bytes);
    END IF;
    RETURN NULL;
END $$;

-- A version's value, a kept foreign record and the ext of a tombstone or scope policy count
-- for their owner until deleted.
CREATE FUNCTION public.lorestore_count_stored() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    old_bytes bigint := 0;
    new_bytes bigint := 0;
BEGIN
    -- One assignment per table: a row of another table has no such field.
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        IF TG_TABLE_NAME = 'lesson_versions' THEN
            old_bytes := pg_catalog.octet_length(OLD.value);
        ELSIF TG_TABLE_NAME = 'foreign_records' THEN
            old_bytes := pg_catalog.octet_length(OLD.record::text);
        ELSE
            old_bytes := pg_catalog.octet_length(OLD.ext::text);
        END IF;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        IF TG_TABLE_NAME = 'lesson_versions' THEN
            new_bytes := pg_catalog.octet_length(NEW.value);
        ELSIF TG_TABLE_NAME = 'foreign_records' THEN
            new_bytes := pg_catalog.octet_length(NEW.record::text);
        ELSE
            new_bytes := pg_catalog.octet_length(NEW.ext::text);
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.owner = NEW.owner THEN
        PERFORM public.lorestore_count_owner(NEW.owner, 0, new_bytes - old_bytes);
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM public.lorestore_count_owner(OLD.owner, 0, -old_bytes);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM public.lorestore_count_owner(NEW.owner, 0, new_bytes);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER lessons_count AFTER INSERT OR DELETE OR UPDATE OF owner, status, value, ext
    ON public.lessons FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_lesson();
CREATE TRIGGER lesson_versions_count AFTER INSERT OR DELETE OR UPDATE OF owner, value
    ON public.lesson_versions FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();
CREATE TRIGGER foreign_records_count AFTER INSERT OR DELETE OR UPDATE OF owner, record
    ON public.foreign_records FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();
CREATE TRIGGER tombstones_count AFTER INSERT OR DELETE OR UPDATE OF owner, ext
    ON public.tombstones FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();
CREATE TRIGGER scope_policies_count AFTER INSERT OR DELETE OR UPDATE OF owner, ext
    ON public.scope_policies FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();

GRANT SELECT, INSERT, UPDATE ON public.owner_stats TO lorestore_definer;
GRANT SELECT ON public.cap_defaults TO lorestore_definer;
ALTER FUNCTION public.lorestore_count_owner(text, integer, bigint) OWNER TO lorestore_definer;
ALTER FUNCTION public.lorestore_count_lesson() OWNER TO lorestore_definer;
ALTER FUNCTION public.lorestore_count_stored() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION public.lorestore_count_owner(text, integer, bigint),
    public.lorestore_count_lesson(), public.lorestore_count_stored() FROM PUBLIC;
