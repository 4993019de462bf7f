// expect: - function
// options: --size N=8


