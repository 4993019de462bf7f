# expect: 4:5 while
# options: --size N=8
def f(N: int, A: 'double[N]'):
    while N > 0:
        A[0] = 1.0
