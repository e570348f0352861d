{{ config(materialized='table') }}
select order_id, customer, amount
from {{ ref('orders') }}
where status = 'paid'
