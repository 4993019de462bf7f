# expect: 3:7 has no type
# options: --size N=8
def f(N, A: 'double[N]'):
    for i in range(N):
        A[i] = 1.0
