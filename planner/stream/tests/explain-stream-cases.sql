-- One CREATE MATERIALIZED VIEW per case; explain-stream.golden holds EXPLAIN of each.
create materialized view by_customer as select customer, count(*), sum(amount) from orders group by customer;
create materialized view totals as select count(*), max(amount) from orders;
create materialized view named as select o.id, c.name from orders o join customers c on o.customer = c.id where o.amount > 10;
create materialized view outer_joined as select c.name, o.id from customers c left join orders o on o.customer = c.id and o.amount > 5;
create materialized view full_joined as select c.name, r.name from customers c full join regions r on c.region = r.id;
create materialized view with_orders as select id from customers c where exists (select 1 from orders o where o.customer = c.id);
create materialized view without_orders as select id from customers c where not exists (select 1 from orders o where o.customer = c.id);
create materialized view in_list as select id from orders where customer in (select id from customers where region = 1);
create materialized view top3 as select id, amount from orders order by amount desc limit 3;
create materialized view top_per_customer as select * from (select id, customer, row_number() over (partition by customer order by amount desc) as rn from orders) x where rn <= 2;
create materialized view kinds as select distinct kind from events;
create materialized view all_ids as select id from customers union all select id from regions;
create materialized view common_ids as select id from customers intersect select id from regions;
create materialized view per_window as select window_start, count(*) from tumble(events, at, interval '1 hour') group by window_start;
create materialized view hopping as select window_start, count(*) from hop(events, at, interval '1 hour', interval '2 hours') group by window_start;
create materialized view crossed as select o.id, r.id from orders o, regions r where o.amount > r.id;
create materialized view above_average as select id, amount from orders where amount > (select avg(amount) from orders);
create materialized view last_hour as select kind from events where at > now() - interval '1 hour';
