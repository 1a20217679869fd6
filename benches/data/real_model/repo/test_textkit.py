from textkit import slugify, word_count, clamp, average, is_palindrome, first_line, percent, initials, truncate, count_vowels, median, celsius, chunk, dedupe, parse_bool, pad_left, safe_int, last_word, even_numbers, join_words


def test_slugify():
    assert slugify("Hello World") == "hello-world"


def test_word_count():
    assert word_count("a  b") == 2


def test_clamp():
    assert clamp(5, 0, 3) == 3


def test_average():
    assert average([]) == 0


def test_is_palindrome():
    assert is_palindrome("Racecar")


def test_first_line():
    assert first_line("a\nb") == "a"


def test_percent():
    assert percent(1, 4) == 25.0


def test_initials():
    assert initials("ada lovelace") == "AL"


def test_truncate():
    assert truncate("abc", 5) == "abc"


def test_count_vowels():
    assert count_vowels("AEIOU") == 5


def test_median():
    assert median([1, 2, 3, 4]) == 2.5


def test_celsius():
    assert celsius(212) == 100


def test_chunk():
    assert chunk([1, 2, 3], 2) == [[1, 2], [3]]


def test_dedupe():
    assert dedupe([3, 1, 3, 2]) == [3, 1, 2]


def test_parse_bool():
    assert parse_bool("Yes")


def test_pad_left():
    assert pad_left("ab", 4) == "  ab"


def test_safe_int():
    assert safe_int("x") == 0


def test_last_word():
    assert last_word("") == ""


def test_even_numbers():
    assert even_numbers([1, 2, 3, 4]) == [2, 4]


def test_join_words():
    assert join_words(["a", "b"]) == "a, b"
