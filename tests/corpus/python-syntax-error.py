# expect: 4:22 syntax error
# options: --size N=8
def f(N: int, A: 'double[N]'):
    for i in range(N)
        A[i] = 1.0
