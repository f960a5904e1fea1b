"""Numbers written in words, English, German and more: reads no data file itself.

`numberwords` reads one number in words (`twelve`, `one hundred and four`, `zwölf`,
`two point five`, `three quarters`, `fünfzig Prozent`) and the number words of
questions; `numberphrases` reads how a value is written after a name (`10 apples`,
`twenty-five`, `1.5 million`). The arithmetic, text and images families read numbers
through them.
"""
