-- The three Nexmark streams as sources of oxbow's built-in generator (connector = 'nexmark',
-- executor/connectors/generators/). Each source reads its kind of the same event sequence: of every
-- 50 events, 1 is a person, 3 are auctions and 46 are bids.
-- bench/nexmark.ts fills in {events} (the events generated, all kinds), {splits} (partitions)
-- and {chunk_size} (rows per chunk); events arrive as fast as they are read (no gap).

CREATE SOURCE person (
    id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, city VARCHAR, state VARCHAR,
    date_time TIMESTAMP, extra VARCHAR
) WITH (
    connector = 'nexmark', nexmark.table.type = 'Person', nexmark.event.num = '{events}',
    nexmark.split.num = '{splits}', nexmark.max.chunk.size = '{chunk_size}', nexmark.min.event.gap.in.ns = '0'
);

CREATE SOURCE auction (
    id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT,
    date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR
) WITH (
    connector = 'nexmark', nexmark.table.type = 'Auction', nexmark.event.num = '{events}',
    nexmark.split.num = '{splits}', nexmark.max.chunk.size = '{chunk_size}', nexmark.min.event.gap.in.ns = '0'
);

CREATE SOURCE bid (
    auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP,
    extra VARCHAR
) WITH (
    connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '{events}',
    nexmark.split.num = '{splits}', nexmark.max.chunk.size = '{chunk_size}', nexmark.min.event.gap.in.ns = '0'
);
