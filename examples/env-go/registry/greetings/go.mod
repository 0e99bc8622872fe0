module example.com/greetings

go 1.21
