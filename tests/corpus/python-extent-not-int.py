# expect: 3:1 not an int parameter
# options: --size N=8
def f(N: int, A: 'double[M]'):
    for i in range(N):
        A[i] = 1.0
