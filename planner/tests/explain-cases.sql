-- Golden EXPLAIN cases: each query is printed at every stage (LOGICAL, OPTIMIZED, PHYSICAL) into
-- explain.golden. Regenerate with: UPDATE=1 npx vitest run planner/tests/explain.test.ts
-- Tables: orders(id int pk, customer int, amount numeric, placed date), customers(id int pk,
-- name text, region int), regions(id int pk, name text), events(kind text, at timestamptz) (no key).
select id, amount from orders where amount > 10;
select name from customers c where c.region = 1 and c.id > 5;
select o.id, c.name from orders o join customers c on o.customer = c.id where c.region = 3;
select o.id from orders o, customers c, regions r where r.id = c.region and c.id = o.customer;
select r.name from regions r, orders o, customers c where c.id = o.customer and r.id = c.region and o.amount > 100;
select customer, count(*), sum(amount) from orders group by customer having count(*) > 1 order by 2 desc limit 5;
select c.name, o.id from customers c left join orders o on o.customer = c.id and o.amount > 5 where c.region = 2;
select id from customers where id in (select customer from orders where amount > 50);
select id, (select count(*) from orders o where o.customer = c.id) from customers c;
select 1 + 2 * 3, 'a' || 'b', case when 1 > 2 then 'x' else 'y' end;
select id from orders where 1 = 1 and placed > date '2024-01-01';
select kind, row_number() over (partition by kind order by at) from events;
select name from customers union select name from regions order by 1;
select distinct on (customer) customer, amount from orders order by customer, amount desc;
select * from orders for system_time as of timestamptz '2024-01-01 00:05:00+00' - interval '5 minutes';
select * from events for system_time between '2024-01-01 00:00:00+00' and '2024-01-02 00:00:00+00';
select g, c.name from generate_series(1, 3) g join customers c on c.id = g;
insert into orders values (1, 2, 3.5, '2024-01-01') on conflict (id) do update set amount = excluded.amount;
update orders set amount = amount * 2 from customers c where c.id = orders.customer and c.region = 1;
delete from events where kind = 'x';
select c.name from customers c where exists (select 1 from orders o where o.customer = c.id and o.amount > 10);
select c.name from customers c where not exists (select 1 from orders o where o.customer = c.id);
select c.name from customers c where c.region in (select r.id from regions r where r.name = c.name);
with recursive r(n) as (select 1 union all select n + 1 from r where n < 3) select n from r;
select a.id from customers a join customers b on a.name is not distinct from b.name;
select name, region from customers where id = 42;
select name from customers where id in (3, 1, 2) and region > 0;
update orders set amount = 0 where id = 7;
select * from orders for system_time as of timestamptz '2024-01-01 00:05:00+00' where id = $1;
select name from customers where id = 1 or region = 2;
-- secondary indexes: the longest pinned prefix, IN lists, a row-id table, AS OF, and none without equality
select name from customers where region = 3;
select id from orders where customer = 7 and placed = date '2024-01-02';
select id from orders where customer in (1, 2) and amount > 5;
select id from orders where placed = date '2024-01-02';
select at from events where kind = $1;
select name from customers for system_time as of timestamptz '2024-01-01 00:05:00+00' where region = 1;
select name from customers where region > 3;
