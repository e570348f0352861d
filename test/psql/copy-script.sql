create table ct (id int primary key, v text not null, w text);
copy ct from stdin;
1	a\tb	\N
2	c	d
\.
copy ct from stdin;
3	x	y
1	dup	z
\.
copy ct from stdin;
4	\N	z
\.
copy ct from stdin (format csv, header);
id,v,w
5,"q, ""r""",
three,s,t
\.
copy ct from stdin;
6	a	b	c
\.
copy ct from stdin;
7	a
\.
copy ct (id, v) from stdin (format csv);
8,"unterminated
\.
select * from ct order by id;
copy ct to stdout;
copy ct to stdout (format csv, header);
copy (select id, w from ct order by id desc) to stdout (format csv);
