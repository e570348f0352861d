-- SQL functions: \sf and pg_get_functiondef print what PostgreSQL prints for the AS form, and
-- DROP FUNCTION of a function a DEFAULT, a CHECK or a view uses is 2BP01 with PostgreSQL's DETAIL,
-- unless CASCADE (which drops the default, the constraint and the view; the table stays). The
-- reg* casts name them as PostgreSQL's regprocin / regprocout do.
create function one() returns int language sql as 'select 1';
create function plus(a int, b bigint) returns bigint language sql immutable strict as $$select a + b$$;
create function twice(int) returns int language sql stable as 'select $1 * 2';
create function "Shout"("X" varchar(10)) returns varchar(5) language sql as $$ select upper("X") $$;
create function tricky() returns text language sql as $x$select '$function$'$x$;
create schema s;
create function s.yes() returns boolean language sql immutable as 'select true';
\sf one
\sf plus
\sf twice(int)
\sf "Shout"
\sf tricky
\sf s.yes
\sf+ plus
select pg_get_functiondef('plus(int, bigint)'::regprocedure) = pg_get_functiondef('plus'::regproc) as same;
select pg_get_functiondef(0) is null as unknown_is_null;
select pg_get_functiondef(2108);
\df
select 'plus'::regproc, 'plus(int,bigint)'::regprocedure, 's.yes'::regproc, 's.yes()'::regprocedure, '"Shout"'::regproc::oid::regprocedure as shout;
set search_path = s, public;
select 's.yes'::regproc, 'yes()'::regprocedure, 'plus'::regproc;
reset search_path;
create table t (a int default one(), b int check (twice(b) > 0), c int, constraint c_above check (c > one()));
create table u (x int default one() + 1);
create view v as select one() as x;
drop function one();
drop function twice(int);
drop function one() restrict;
insert into t (b, c) values (1, 2);
select * from t;
drop function one() cascade;
drop function twice cascade;
\d t
\d u
insert into t (b, c) values (-1, 0);
select * from t order by b;
select count(*) from pg_views where viewname = 'v';
