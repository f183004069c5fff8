#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/csv.h"

using namespace citeforge::data;

TEST_CASE("csv: quoted fields hold commas, newlines and doubled quotes", "[csv]") {
  auto t = parse_csv("a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\nnext line\"\n2,,\"\"\n", "f.csv");
  CHECK(t.header == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(t.records.size() == 2);
  CHECK(t.records[0].fields == std::vector<std::string>{"1", "x, y", "say \"hi\"\nnext line"});
  CHECK(t.records[0].line == 2);
  CHECK(t.records[1].fields == std::vector<std::string>{"2", "", ""});
  CHECK(t.records[1].line == 4);  // the quoted newline moved it down a line
}

TEST_CASE("csv: CRLF endings, a byte-order mark, no final newline, blank lines", "[csv]") {
  auto t = parse_csv("\xEF\xBB\xBFid,text\r\n1,\"a\r\nb\"\r\n\r\n2,c", "f.csv");
  CHECK(t.header == std::vector<std::string>{"id", "text"});
  REQUIRE(t.records.size() == 2);
  CHECK(t.records[0].fields[1] == "a\r\nb");
  CHECK(t.records[1].fields == std::vector<std::string>{"2", "c"});
  CHECK(t.records[1].line == 5);
}

TEST_CASE("csv: columns are found by header name", "[csv]") {
  auto t = parse_csv(",question,instruction\n0,q,i\n", "g.csv");
  CHECK(t.column("instruction") == 2);
  CHECK(t.column("") == 0);  // pandas' unnamed index column
  CHECK(t.has_column("question"));
  CHECK_FALSE(t.has_column("gpt-4"));
  CHECK_THROWS_WITH(
      t.column("gpt-4"),
      "g.csv: line 1: missing column 'gpt-4' (header has '', 'question', 'instruction')");
  auto twice = parse_csv("a,a\n1,2\n", "d.csv");
  CHECK_THROWS_WITH(twice.column("a"), "d.csv: line 1: column 'a' appears twice");
}

TEST_CASE("csv: malformed input names the file and the line", "[csv]") {
  CHECK_THROWS_WITH(
      parse_csv("a,b\n1,2\n3,\"never\nclosed\n", "f.csv"),
      "f.csv: line 3: unterminated quoted field (the quote opened here is never closed)");
  CHECK_THROWS_WITH(parse_csv("a,b\n1,x\"y\n", "f.csv"),
                    "f.csv: line 2: quote inside an unquoted field 2");
  CHECK_THROWS_WITH(parse_csv("a,b\n\"1\"x,2\n", "f.csv"),
                    "f.csv: line 2: unexpected character after a closing quote in field 1");
  CHECK_THROWS_WITH(parse_csv("a,b\n1,2\n\"multi\nline\",2,3\n", "f.csv"),
                    "f.csv: line 3: record has 3 fields, header has 2");
  CHECK_THROWS_WITH(parse_csv("", "f.csv"), "f.csv: empty CSV file (no header)");
  CHECK_THROWS_WITH(read_csv("/nonexistent/x.csv"), "/nonexistent/x.csv: cannot open for reading");
}
