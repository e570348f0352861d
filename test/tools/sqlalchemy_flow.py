"""SQLAlchemy 2 against a server: create_all, ORM writes and reads, the inspector, stream_results.

Usage: python sqlalchemy_flow.py URL  (postgresql+psycopg://... or postgresql+psycopg2://...)
Prints one JSON object with what each step saw; test/tools/sqlalchemy.test.ts asserts on it.
Warnings (psycopg's included) are collected and printed too, so a test can say there were none.
"""
import json
import sys
import warnings

from sqlalchemy import ForeignKey, Integer, String, create_engine, event, inspect, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    # An Integer primary key: SQLAlchemy makes it SERIAL and reads the ids back with RETURNING.
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    books: Mapped[list["Book"]] = relationship(back_populates="author", order_by="Book.id")


class Book(Base):
    __tablename__ = "book"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    author_id: Mapped[int] = mapped_column(ForeignKey("author.id"), index=True)
    author: Mapped[Author] = relationship(back_populates="books")


def main() -> None:
    url = sys.argv[1]
    out: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine = create_engine(url)
        # Every server NOTICE and WARNING the driver receives (a rollback must not warn).
        notices: list = []

        @event.listens_for(engine, "connect")
        def collect_notices(dbapi_connection, _record):
            if hasattr(dbapi_connection, "add_notice_handler"):  # psycopg 3
                dbapi_connection.add_notice_handler(
                    lambda diag: notices.append(f"{diag.severity_nonlocalized}: {diag.message_primary}")
                )
            else:  # psycopg2 keeps them on the connection
                notices_of_psycopg2.append(dbapi_connection)

        notices_of_psycopg2: list = []
        Base.metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(text("CREATE VIEW book_titles AS SELECT id, title FROM book"))
            conn.execute(text("CREATE MATERIALIZED VIEW books_per_author AS SELECT author_id, count(*) AS n FROM book GROUP BY author_id"))

        with Session(engine) as session:
            # Ids from the sequences (one multi-row INSERT ... RETURNING per table), books given
            # ids of their own; each book's author_id from its author object.
            ursula, stanislaw = Author(name="Ursula"), Author(name="Stanislaw")
            session.add_all([ursula, stanislaw])
            session.flush()
            out["author_ids"] = [ursula.id, stanislaw.id]
            session.add_all([
                Book(id=10, title="The Dispossessed", author=ursula),
                Book(id=11, title="The Lathe of Heaven", author=ursula),
                Book(id=20, title="Solaris", author=stanislaw),
                Book(id=21, title="Fiasco", author=stanislaw),
            ])
            session.commit()
            # A book with no id takes the sequence's next value; a book whose author does not exist
            # is refused by the foreign key.
            extra = Book(title="Summa Technologiae", author_id=stanislaw.id)
            session.add(extra)
            session.flush()
            out["book_serial_id"] = extra.id
            session.delete(extra)
            session.commit()
            try:
                session.add(Book(id=99, title="Orphan", author_id=42))
                session.flush()
                out["orphan"] = "inserted"
            except Exception as error:  # noqa: BLE001 - reported to the test, which asserts on it
                out["orphan"] = getattr(getattr(error, "orig", None), "sqlstate", None) or getattr(getattr(error, "orig", None), "pgcode", None) or type(error).__name__
            session.rollback()
        with Session(engine) as session:
            book = session.get(Book, 21)
            book.title = "Fiasko"
            session.delete(session.get(Book, 11))
            session.commit()
        with Session(engine) as session:
            rows = session.execute(select(Author).order_by(Author.id)).scalars().all()
            out["orm"] = [{"name": a.name, "books": [b.title for b in a.books]} for a in rows]
            # A rolled-back session leaves nothing behind (its sequence value, 3, stays used).
            session.add(Author(name="Rolled back"))
            session.flush()
            session.rollback()
            out["after_rollback"] = session.execute(select(Author.id).order_by(Author.id)).scalars().all()
            # A savepoint (begin_nested) rolled back keeps the outer transaction's rows.
            session.add(Author(name="Outer"))
            nested = session.begin_nested()
            session.add(Author(name="Inner"))
            session.flush()
            nested.rollback()
            session.commit()
            out["after_nested"] = session.execute(select(Author.id).order_by(Author.id)).scalars().all()

        inspector = inspect(engine)
        out["tables"] = sorted(inspector.get_table_names())
        out["views"] = sorted(inspector.get_view_names())
        out["materialized_views"] = sorted(inspector.get_materialized_view_names())
        out["columns"] = [
            {"name": c["name"], "type": str(c["type"]), "nullable": c["nullable"], "default": c["default"], "autoincrement": c.get("autoincrement")}
            for c in inspector.get_columns("book")
        ]
        out["pk"] = inspector.get_pk_constraint("book")["constrained_columns"]
        out["fks"] = [
            {"columns": fk["constrained_columns"], "table": fk["referred_table"], "referred": fk["referred_columns"]}
            for fk in inspector.get_foreign_keys("book")
        ]
        try:
            out["indexes"] = sorted(
                ({"name": i["name"], "columns": i["column_names"], "unique": i["unique"]} for i in inspector.get_indexes("book")),
                key=lambda i: i["name"],
            )
        except Exception as error:  # noqa: BLE001 - reported to the test, which asserts on it
            out["indexes_error"] = f"{type(error).__name__}: {error}"

        with engine.connect() as conn:
            result = conn.execution_options(stream_results=True, max_row_buffer=2).execute(
                text("SELECT id, title FROM book ORDER BY id")
            )
            out["streamed"] = [list(row) for row in result]
            conn.rollback()
        engine.dispose()
    for connection in notices_of_psycopg2:
        notices.extend(notice.strip() for notice in connection.notices)
    out["warnings"] = [str(w.message) for w in caught]
    out["notices"] = notices
    print(json.dumps(out))


if __name__ == "__main__":
    main()
