package oxbow.nexmark;

import org.apache.flink.table.functions.ScalarFunction;

/**
 * Query 14's user-defined function {@code count_char(s, c)}: how many times the character {@code c}
 * occurs in {@code s}, letters compared without case (NULL {@code s}: 0). A port of the Nexmark
 * suite's {@code com.github.nexmark.flink.udf.CountChar} (https://github.com/nexmark/nexmark,
 * Apache License 2.0); oxbow's q14 defines it in SQL over the generator's lowercase strings.
 */
public final class CountChar extends ScalarFunction {
  public long eval(String s, String character) {
    if (s == null || character == null || character.isEmpty()) return 0;
    char c = Character.toLowerCase(character.charAt(0));
    long count = 0;
    for (int i = 0; i < s.length(); i++) {
      if (Character.toLowerCase(s.charAt(i)) == c) count++;
    }
    return count;
  }
}
