{{ config(materialized='view') }}
select customer, count(*) as orders, sum(amount) as total
from {{ ref('paid_orders') }}
group by customer
